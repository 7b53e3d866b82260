"""What the adapters offer around a conversion: the conversion report (`report`), the
rehearsal on N ranks (`verify`: converts, runs under horovodrun, compares the ranks),
the stack doctor (`doctor`: can an interpreter's TensorFlow / Keras / Horovod run it), the
launch recipes (`launch`: horovodrun, Slurm, Kubeflow MPIJob, Ray files for N ranks), and
the notebook input format (`notebook`: .ipynb code cells as one program, edits mapped back).

Needs first: the engine. May import: parse, the engine, project, codes, errors. Used by the CLI and
the language server (lsp), never by the core.
"""
