"""Where values of Horovod calls can reach: the few nodes `HvdFacts.flows_from` can answer
yes for, found from the calls forwards instead of asking every node of the file.

HVD207 ("is the work divided between ranks?") asks whether a size()/rank() value flows
into any call argument or subscript of the file. Asking `flows_from` of each one follows
the names each reads backwards, about 80 ms per keystroke on a 10,000-line Horovod
program that divides nothing (the answer no has to be proven everywhere). This module
goes forwards instead: from the calls, through every assignment, call argument and
parameter default they occur in, to the names that may hold such a value, by name alone
(no scope, no order): a superset of the names `flows_from` follows. A node can only
flow from these calls if it contains one of them or one of those names, so the nodes
returned here are all that need asking; `flows_from` still gives the answer.
"""

from __future__ import annotations

from ..parse import nodes as N
from .hvd_facts import _assign_items, _target_names

_STATEMENT_ENDS = frozenset({"simple_stmt", "file_input"})


def reach(facts, apis) -> list:
    """The call nodes of `apis` and the name leaves of every name that may hold a value
    flowing from one of them (``self.x``: its ``self`` leaves); each node at most once."""
    env = facts.env
    names = env.index.names
    tainted: set[str] = set()
    out: list = []
    work: list = [call.node for api in apis for call in facts.api_calls.get(api, ())]

    def taint(name: str) -> None:
        if name in tainted:
            return
        tainted.add(name)
        if name.startswith("self."):
            for leaf in names.get(name[5:], ()):
                trailer = leaf.parent
                owner = trailer.get_previous_sibling() if trailer.type == "trailer" else None
                if owner is not None and owner.type == "name" and owner.value == "self":
                    work.append(owner)
        else:
            work.extend(names.get(name, ()))

    seen: set[int] = set()
    while work:
        node = work.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        out.append(node)
        cur = node
        while cur.parent is not None and cur.type not in _STATEMENT_ENDS:
            parent = cur.parent
            t = parent.type
            if t == "expr_stmt":                       # every target of the assignment
                for target, _value, _op in _assign_items(parent):
                    for name in _target_names(target):
                        taint(name)
            elif t == "param" and parent.name is not cur:   # a default value
                taint(parent.name.value)
            elif t == "trailer":                     # the parameters of the function it calls
                call = N.trailer_call(parent)
                target = env.call_target(call) if call is not None else None
                if target is not None:
                    for name in env.param_names(target):
                        taint(name)
            cur = parent
    return out
