"""Code actions: one quick fix per rule site (edits from ``Diagnostic.data``), alternatives,
"Make Horovod-distributed" on loop diagnostics and ``source.fixAll.horovodize`` (edits
filled in by ``codeAction/resolve``), none on restriction diagnostics."""

from __future__ import annotations

import pytest
from horovodize.engine import WHOLE_FILE_TITLE
from lsp_helpers import (
    DATA,
    apply_text_edits,
    by_code,
    cli_convert,
    diagnostics_for,
    open_doc,
    replace_all,
    workspace_text_edits,
)
from lsprotocol import types

SETUP = """\
import horovod.tensorflow as hvd
hvd.init()
gpus = tf.config.experimental.list_physical_devices('GPU')
for gpu in gpus:
    tf.config.experimental.set_memory_growth(gpu, True)
if gpus:
    tf.config.experimental.set_visible_devices(gpus[hvd.local_rank()], 'GPU')
"""


async def actions_for(client, uri, diags, only=None) -> list[types.CodeAction]:
    rng = diags[0].range if diags else types.Range(start=types.Position(line=0, character=0),
                                                   end=types.Position(line=0, character=0))
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=rng,
        context=types.CodeActionContext(diagnostics=diags, only=only)))
    return list(actions or [])


def applied(client, uri, action: types.CodeAction) -> str:
    edits = workspace_text_edits(action.edit)
    assert list(edits) == [uri]
    return apply_text_edits(client.buffers[uri], edits[uri], client.encoding)


async def test_quick_fix_for_one_site(client):
    uri = open_doc(client, "tape.py")
    lr = by_code(await diagnostics_for(client, uri), "HVD010")
    actions = await actions_for(client, uri, [lr], only=[types.CodeActionKind.QuickFix])
    assert [(a.title, a.kind, a.is_preferred) for a in actions] == [
        ("Scale learning rate by hvd.size()", "quickfix", True)]
    fixed = applied(client, uri, actions[0])
    # the site's own edit plus the shared set-up, nothing else
    expected = client.buffers[uri].replace("import tensorflow as tf\n", "import tensorflow as tf\n" + SETUP, 1)
    expected = expected.replace("Adam(learning_rate=0.002)", "Adam(learning_rate=0.002 * hvd.size())")
    assert fixed == expected
    # versioned: the client refuses it for another version
    assert actions[0].edit.document_changes[0].text_document.version == 1


async def test_alternative_fix(client):
    uri = open_doc(client, "tape.py")
    take = by_code(await diagnostics_for(client, uri), "HVD040")
    actions = await actions_for(client, uri, [take], only=[types.CodeActionKind.QuickFix])
    # tape.py's dataset is not shuffled before the take: the shard comes first (every rank
    # would take the same first elements), dividing the count alone is the alternative
    assert [a.title for a in actions] == ["Shard the dataset by rank and take max(1, n // hvd.size())",
                                          "Take max(1, n // hvd.size()) elements per rank"]
    assert "dataset.shard(hvd.size(), hvd.rank()).take(max(1, 64 // hvd.size()))" in applied(client, uri, actions[0])
    assert "dataset.take(max(1, 64 // hvd.size()))" in applied(client, uri, actions[1])


async def test_restriction_offers_no_fix(client):
    uri = open_doc(client, "restricted.py")
    r7 = by_code(await diagnostics_for(client, uri), "HVD-R7")
    assert await actions_for(client, uri, [r7], only=[types.CodeActionKind.QuickFix]) == []


async def test_whole_file_action_disabled_when_a_restriction_blocks_the_loop(client):
    """All or nothing: the loop diagnostic still offers the whole-file action, disabled,
    with the restriction and its line as the reason, and no quick fix of any site."""
    uri = open_doc(client, "restricted.py")
    diags = await diagnostics_for(client, uri)
    loop = [d for d in diags if d.code in ("HVD100", "HVD101", "HVD102")]
    assert loop and not [d for d in diags if d.code in ("HVD001", "HVD030", "HVD010")]
    actions = await actions_for(client, uri, loop[:1], only=[types.CodeActionKind.QuickFix])
    assert [a.title for a in actions] == [WHOLE_FILE_TITLE]
    assert actions[0].edit is None and actions[0].disabled is not None
    assert "HVD-R7 (line" in actions[0].disabled.reason


async def test_make_horovod_distributed_equals_cli_convert(client):
    uri = open_doc(client, "tape.py")
    loop = by_code(await diagnostics_for(client, uri), "HVD100")
    actions = await actions_for(client, uri, [loop], only=[types.CodeActionKind.QuickFix])
    assert [a.title for a in actions] == [WHOLE_FILE_TITLE]
    action = actions[0]
    assert action.edit is None and action.data      # computed only when picked
    resolved = await client.code_action_resolve_async(action)
    assert applied(client, uri, resolved) == cli_convert(DATA / "tape.py")
    # minimal edits, not a reprint of the file
    assert all(len(e.new_text) < 400 for e in workspace_text_edits(resolved.edit)[uri])


@pytest.mark.parametrize("client", [{"resolve": False, "document_changes": False}], indirect=True)
async def test_edits_included_when_the_client_cannot_resolve(client):
    uri = open_doc(client, "keras_fit.py")
    loop = by_code(await diagnostics_for(client, uri), "HVD101")
    actions = await actions_for(client, uri, [loop], only=[types.CodeActionKind.QuickFix])
    assert [a.title for a in actions] == [WHOLE_FILE_TITLE]
    assert actions[0].edit.changes is not None       # no documentChanges support
    assert applied(client, uri, actions[0]) == cli_convert(DATA / "keras_fit.py")


async def test_fix_all(client):
    uri = open_doc(client, "keras_fit.py")
    await diagnostics_for(client, uri)
    actions = await actions_for(client, uri, [], only=[types.CodeActionKind.SourceFixAll])
    assert [a.kind for a in actions] == ["source.fixAll.horovodize"]
    resolved = await client.code_action_resolve_async(actions[0])
    assert applied(client, uri, resolved) == cli_convert(DATA / "keras_fit.py")


async def test_no_whole_file_action_once_converted(client):
    uri = open_doc(client, "tape.py", text=cli_convert(DATA / "tape.py"))
    diags = await diagnostics_for(client, uri)
    assert [d.code for d in diags] == []
    assert await actions_for(client, uri, [], only=[types.CodeActionKind.SourceFixAll]) == []


async def test_stale_diagnostic_offers_nothing(client):
    uri = open_doc(client, "tape.py")
    lr = by_code(await diagnostics_for(client, uri, version=1), "HVD010")
    replace_all(client, uri, "\n" + client.buffers[uri], version=2)
    await diagnostics_for(client, uri, version=2)
    # its edits were made for version 1
    assert await actions_for(client, uri, [lr], only=[types.CodeActionKind.QuickFix]) == []


async def test_unfiltered_request_offers_quick_fixes_and_fix_all(client):
    uri = open_doc(client, "tape.py")
    lr = by_code(await diagnostics_for(client, uri), "HVD010")
    actions = await actions_for(client, uri, [lr])
    assert [a.kind for a in actions] == ["quickfix", "source.fixAll.horovodize"]


KERAS_CORE = """\
import keras_core as keras
import tensorflow as tf

model = keras.Sequential([keras.layers.Dense(1)])
model.compile(optimizer=keras.optimizers.SGD(0.01), loss="mse")
model.fit(tf.ones((8, 4)), tf.ones((8, 1)), epochs=2)
"""


@pytest.mark.parametrize("client, line", [({}, "from tensorflow import keras"),
                                          ({"options": {"kerasTarget": "tf_keras"}}, "import tf_keras as keras")],
                         indirect=["client"])
async def test_keras3_import_quick_fix_follows_the_keras_target_option(client, line):
    uri = open_doc(client, "keras_core.py", KERAS_CORE)
    trap = by_code(await diagnostics_for(client, uri), "HVD090")
    actions = await actions_for(client, uri, [trap], only=[types.CodeActionKind.QuickFix])
    assert len(actions) == 1 and "import Keras 2" in actions[0].title
    assert line in applied(client, uri, actions[0]).splitlines()


@pytest.mark.parametrize("client", [{"options": {"kerasTarget": "keras3"}}], indirect=True)
async def test_keras3_target_option_keeps_keras3_and_sets_the_backend(client):
    """kerasTarget "keras3": the HVD090 quick fix sets KERAS_BACKEND=tensorflow above the
    import (which stays), and the whole-file fix writes the Keras 3 adapters (docs/keras3.md)."""
    uri = open_doc(client, "keras_core.py", KERAS_CORE)
    found = await diagnostics_for(client, uri)
    trap = by_code(found, "HVD090")
    assert "the keras3 target" in trap.message
    actions = await actions_for(client, uri, [trap], only=[types.CodeActionKind.QuickFix])
    assert len(actions) == 1 and "KERAS_BACKEND" in actions[0].title
    text = applied(client, uri, actions[0])
    assert text.startswith('import os\nos.environ["KERAS_BACKEND"] = "tensorflow"') and "import keras_core as keras\n" in text
    loop = by_code(found, "HVD101")
    [fix_all] = [a for a in await actions_for(client, uri, [loop]) if a.kind == "source.fixAll.horovodize"]
    out = applied(client, uri, await client.code_action_resolve_async(fix_all))
    assert "def DistributedOptimizer(optimizer):" in out and "jit_compile=False" in out
    assert "horovod.tensorflow.keras" not in out


FIXED_POINT = """\
import tensorflow as tf

image = tf.Variable(tf.random.uniform((1, 8, 8, 3)))
target = tf.random.uniform((1, 8, 8, 3))
optimizer = tf.keras.optimizers.SGD(learning_rate=1.0)
for i in range(100):
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.square(image - target))
    grads = tape.gradient(loss, image)
    optimizer.apply_gradients([(grads, image)])
"""


@pytest.mark.parametrize("client, scaled", [({}, True), ({"options": {"scaleLearningRate": False}}, False)],
                         indirect=["client"])
async def test_identical_work_is_refused_unless_the_rate_is_left_unscaled(client, scaled):
    """Every rank would compute the same step: "Make Horovod-distributed" is disabled with
    "nothing to distribute" while the rate would be scaled; with `scaleLearningRate` off it
    converts, leaving the rate as it is (issue 39)."""
    uri = open_doc(client, "fixed_point.py", FIXED_POINT)
    loop = by_code(await diagnostics_for(client, uri), "HVD100")
    actions = await actions_for(client, uri, [loop], only=[types.CodeActionKind.QuickFix])
    assert [a.title for a in actions] == [WHOLE_FILE_TITLE]
    if scaled:
        assert actions[0].disabled is not None and "nothing to distribute" in actions[0].disabled.reason
        return
    assert actions[0].disabled is None
    resolved = await client.code_action_resolve_async(actions[0])
    out = applied(client, uri, resolved)
    assert "hvd.DistributedGradientTape(tape)" in out and "learning_rate=1.0)" in out and "hvd.size()" not in out


READS_RANK0_FILE = """\
import numpy as np
import tensorflow as tf

x = np.random.rand(64, 4).astype("float32")
y = x.sum(axis=1)
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="mse")
model.fit(x, y, epochs=2)
model.save("model.h5")
restored = tf.keras.models.load_model("model.h5")
restored.fit(x, y, epochs=1)
"""


@pytest.mark.parametrize("client, local", [({}, False), ({"options": {"requireLocalFs": True}}, True)],
                         indirect=["client"])
async def test_reads_of_rank0s_files_are_refused_when_local_fs_is_required(client, local):
    """Every rank reads the file rank 0 saved, after a barrier: converted by default (point 7
    says it needs a shared filesystem); with `requireLocalFs` "Make Horovod-distributed" is
    disabled, the reason naming the path and its line (contract point 13)."""
    uri = open_doc(client, "reads_rank0_file.py", READS_RANK0_FILE)
    loop = by_code(await diagnostics_for(client, uri), "HVD101")
    actions = await actions_for(client, uri, [loop], only=[types.CodeActionKind.QuickFix])
    assert [a.title for a in actions] == [WHOLE_FILE_TITLE]
    if local:
        reason = actions[0].disabled.reason
        assert 'needs a shared filesystem (--require-local-fs): `"model.h5"` (line 10)' in reason, reason
        return
    assert actions[0].disabled is None
    out = applied(client, uri, await client.code_action_resolve_async(actions[0]))
    assert 'hvd.allreduce(tf.constant(0), name="barrier")\nrestored = ' in out


@pytest.mark.parametrize("client", [{"options": {"requireLocalFs": "yes"}}], indirect=True)
async def test_require_local_fs_must_be_a_boolean(client):
    """An invalid `requireLocalFs` is reported and replaced by its default (off)."""
    from horovodize.lsp import options

    loaded, problems = options.load({"requireLocalFs": "yes"})
    assert not loaded.require_local_fs and problems == ["`requireLocalFs` must be true or false"]
    assert options.load({"requireLocalFs": True})[0].require_local_fs
    uri = open_doc(client, "reads_rank0_file.py", READS_RANK0_FILE)
    loop = by_code(await diagnostics_for(client, uri), "HVD101")
    actions = await actions_for(client, uri, [loop], only=[types.CodeActionKind.QuickFix])
    assert actions[0].disabled is None
