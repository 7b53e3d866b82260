"""Values the command line gives are the same on every rank, whichever library parses it:
a training call under a test of them converts branch by branch (no HVD-T5 refusal), as under
argparse and absl flags; a plain parameter, or a local the loop rebinds, still blocks."""

from __future__ import annotations

import pytest
from horovodize.engine import analyze

PROGRAM = '''\
import tensorflow as tf
{head}
def main({params}):
{body}    model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(4,))])
    model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="mse")
    x = tf.random.normal((64, 4))
    y = tf.reduce_sum(x, axis=1)
    if {test}:
        model.fit(x, y, batch_size=8, epochs=2)


{tail}
'''
HF = ("from transformers import HfArgumentParser, TrainingArguments\n", "",
      "    parser = HfArgumentParser((TrainingArguments,))\n"
      "    training_args, = parser.parse_args_into_dataclasses()\n", "training_args.do_train", "main()")
CASES = {
    "hf_argument_parser": HF,
    "click": ("import click\n\n\n@click.command()\n@click.option('--train/--no-train', default=True)", "train", "",
              "train", "main()"),
    "typer": ("import typer\n\napp = typer.Typer()\n\n\n@app.command()", "train: bool = True", "", "train", "app()"),
    "fire": ("import fire\n", "train=True", "", "train", "fire.Fire(main)"),
    "hydra": ("import hydra\n\n\n@hydra.main(config_path='conf', config_name='config', version_base=None)", "cfg", "",
              "cfg.train", "main()"),
}


def program(head, params, body, test, tail):
    return PROGRAM.format(head=head, params=params, body=body, test=test, tail=tail)


def blocking(text):
    a = analyze(text)
    return a, sorted({f.code for f in a.findings if f.code.startswith("HVD-")})


@pytest.mark.parametrize("case", sorted(CASES))
def test_fit_under_a_command_line_value_converts(case):
    a, codes = blocking(program(*CASES[case]))
    assert codes == [] and not a.refused, (case, a.refusal_reasons())
    out = a.converted()
    assert "callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0)" in out and "0.01 * hvd.size()" in out


@pytest.mark.parametrize("params, body, tail", [
    ("train=True", "", "main()"),                                           # a plain function's parameter
    ("", "    train = True\n    for train in [True, False]:\n        pass\n", "main()"),   # rebound by a loop
    ("", "    import random\n    train = random.random() > 0.5\n", "main()"),           # per process
])
def test_fit_under_other_parameters_and_locals_still_blocks(params, body, tail):
    a, codes = blocking(program("", params, body, "train", tail))
    assert "HVD-T5" in codes and a.refused


def test_a_function_not_handed_to_fire_keeps_its_restriction():
    text = program("import fire\n", "train=True", "", "train", "fire.Fire(other)\n\n\ndef other():\n    pass")
    assert "HVD-T5" in blocking(text)[1]
