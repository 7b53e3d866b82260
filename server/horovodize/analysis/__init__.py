"""Stage 3, analysis: what the program is, read from the parsed tree.

Provides, in the order the engine builds them: the environment (`env`: which names hold
tensorflow, keras, the optimizer, dataset, model, checkpoint, estimator, schedule, tape;
built with `roles`, `bindings`, `creations`, `callables`), the Horovod facts of a program
that already uses Horovod (`hvd_facts`, `hvd_reach`), the training-loop summary (`loop`,
with TF1 sessions in `session` and the tapes that train in `gradflow`), the Keras 3 and
``tf.distribute`` facts (`keras3`, `strategy`), TensorFlow 1 API the pinned TF 2.15 lacks
(`tf1_api`), a Keras 3 archive layout read on Keras 2 (`keras_layout`), the conditions that are the same on every
rank (`uniform`), what calls do outside the program
(`effects`: write, read, print, display, collective; asked through ``HvdFacts.effects``),
and the restriction checks (`restrictions`:
which rule sites a violated restriction blocks, and why).

Needs first: parse (a `Source`), and for the server an `incremental.index_memo.IndexMemo`.
May import: parse, incremental. Never rules, the engine or an adapter.
"""
