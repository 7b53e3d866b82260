"""parso's parse, with its per-token overheads taken out of the loop; the same tree.

Opening a 10,000-line file was ~0.7 s of parso's parse, most of it in the LL(1) loop
(``BaseParser._add_token``/``_pop``): ~4.5 stack pushes and pops per token, each pop found
by a raised ``KeyError``, each table lookup keyed by a token-type ``Enum`` whose hash is a
Python function. `FastParser` runs the same algorithm over the same grammar tables, keyed by
objects that hash in C, with the pop and the leaf/node constructors inlined. Error
recovery is parso's own: the stack holds parso's ``StackNode`` objects, so its recovery
code runs unchanged on it. `parse` is ``GRAMMAR.parse`` with this parser; the test suite
compares its trees with parso's on every program it has, broken buffers included.
"""

from __future__ import annotations

from parso.parser import InternalParseError, Stack, StackNode
from parso.python import tree
from parso.python.parser import Parser
from parso.python.token import PythonTokenTypes
from parso.python.tokenize import PythonToken
from parso.tree import BaseNode, Node
from parso.utils import split_lines

from . import fast_tokens, forked_tokens

NAME = PythonTokenTypes.NAME
OP = PythonTokenTypes.OP
INDENT = PythonTokenTypes.INDENT
DEDENT = PythonTokenTypes.DEDENT

_TABLES: dict[int, tuple[object, dict, dict]] = {}


def _tables(pgen_grammar) -> tuple[dict, dict]:
    """Each DFA's transitions keyed by ``id(token type)`` or the ``ReservedString`` itself
    (identity hash), by ``id(dfa)`` (DFAs define ``__eq__`` and are unhashable); and the
    grammar's memo of `_walk`: (id(chain), level, key) -> (level, plan)."""
    made = _TABLES.get(id(pgen_grammar))
    if made is None or made[0] is not pgen_grammar:
        table = {}
        for dfas in pgen_grammar.nonterminal_to_dfas.values():
            for dfa in dfas:
                table[id(dfa)] = {key if not isinstance(key, PythonTokenTypes) else id(key): plan
                                  for key, plan in dfa.transitions.items()}
        made = _TABLES[id(pgen_grammar)] = (pgen_grammar, table, {})
    return made[1], made[2]


def _walk(table, dfas, j, key):
    """From level ``j`` of a pending chain outwards, the first level that takes ``key``
    (its plan), or that is not final (no plan: an error there); level -1: all pop."""
    while j >= 0:
        dfa = dfas[j]
        plan = table[id(dfa)].get(key)
        if plan is not None or not dfa.is_final:
            return j, plan
        j -= 1
    return -1, None


class FastParser(Parser):
    """`Parser` with a faster ``parse`` loop (same transitions, same nodes, same recovery).

    A plan's pushes (``expr_stmt`` down to ``atom`` for a name: ~15 nonterminals) go on the
    stack as one *pending chain* ``[dfas, top, carried]`` instead of one ``StackNode`` each:
    levels ``dfas[:top + 1]`` are still in their first state, the innermost holds ``carried``
    (the leaf, or the node a popped level left) and the others nothing. Popping such a level
    only moves ``carried`` up (parso collapses a one-child node into its child), so a chain
    costs a table lookup per level; the level that takes a token becomes a real
    ``StackNode``. Before parso's own code reads the stack (recovery, the end of input) the
    chains are written out as the ``StackNode`` objects parso would have had.
    """

    def parse(self, tokens):
        recovering = self._error_recovery
        if recovering and self._start_nonterminal != "file_input":
            raise NotImplementedError
        grammar = self._pgen_grammar
        table, walks = _tables(grammar)
        reserved = grammar.reserved_syntax_strings
        node = _node_maker(self.node_map, self.default_node)
        make = object.__new__
        leaf_map = {id(type_): cls for type_, cls in self._leaf_map.items()}
        operator, name_leaf, keyword = tree.Operator, tree.Name, tree.Keyword
        id_name, id_op, id_indent, id_dedent = id(NAME), id(OP), id(INDENT), id(DEDENT)
        omit = self._omit_dedent_list
        stack = self.stack = Stack([StackNode(grammar.nonterminal_to_dfas[self._start_nonterminal][0])])
        token = None
        for token in tokens:
            type_, value, start_pos, prefix = token
            type_id = id(type_)
            if recovering and (type_id == id_dedent or type_id == id_indent):   # Parser._recovery_tokenize
                if type_id == id_indent:
                    self._indent_counter += 1
                else:
                    if omit and omit[-1] == self._indent_counter:
                        omit.pop()
                        self._indent_counter -= 1
                        continue
                    self._indent_counter -= 1
            if type_id == id_name or type_id == id_op:
                key = reserved.get(value, type_id)
            else:
                key = type_id
            while True:
                if not stack:
                    raise InternalParseError("too much input", type_, value, start_pos)
                top = stack[-1]
                if type(top) is list:                         # a pending chain
                    dfas, j, carried = top
                    found = walks.get((id(dfas), j, key))
                    if found is None:
                        found = walks[id(dfas), j, key] = _walk(table, dfas, j, key)
                    j, plan = found
                    if j < 0:                                 # every level pops
                        stack.pop()
                        below = stack[-1]
                        if type(below) is list:
                            below[2] = carried
                        else:
                            below.nodes.append(carried)
                        continue
                    if plan is None:
                        top[1] = j
                        self._recover(token)
                        break
                    if j:
                        top[1], top[2] = j - 1, None
                    else:
                        stack.pop()
                    tos = StackNode(plan.next_dfa)
                    tos.nodes.append(carried)
                    stack.append(tos)
                    break
                dfa = top.dfa
                plan = table[id(dfa)].get(key)
                if plan is not None:
                    tos = top
                    tos.dfa = plan.next_dfa
                    break
                if not dfa.is_final:
                    self._recover(token)
                    break
                stack.pop()                                   # BaseParser._pop
                nodes = top.nodes
                new = nodes[0] if len(nodes) == 1 else node(dfa.from_rule, nodes)
                below = stack[-1]
                if type(below) is list:
                    below[2] = new
                else:
                    below.nodes.append(new)
            if plan is None:
                continue
            if type_id == id_name:                            # Parser.convert_leaf
                leaf = make(keyword if value in reserved else name_leaf)
            else:
                leaf = make(leaf_map.get(type_id, operator))
            leaf.value, (leaf.line, leaf.column), leaf.prefix, leaf.parent = value, start_pos, prefix, None   # (Leaf.__init__)
            pushes = plan.dfa_pushes
            if pushes:
                stack.append([pushes, len(pushes) - 1, leaf])
            else:
                tos.nodes.append(leaf)

        self._write_out()
        while True:                                           # BaseParser.parse's end
            tos = stack[-1]
            if not tos.dfa.is_final:
                raise InternalParseError("incomplete input", *token[:3])
            if len(stack) > 1:
                self._pop()
            else:
                return self.convert_node(tos.nonterminal, tos.nodes)

    def _recover(self, token) -> None:
        self._write_out()
        self.error_recovery(PythonToken(*token))     # parso reads ``token.type``

    def _write_out(self) -> None:
        """The pending chains as the ``StackNode`` objects parso's loop would have made."""
        stack = self.stack
        if not any(type(entry) is list for entry in stack):
            return
        nodes = []
        for entry in stack:
            if type(entry) is not list:
                nodes.append(entry)
                continue
            dfas, top, carried = entry
            nodes.extend(StackNode(dfa) for dfa in dfas[:top + 1])
            if carried is not None:
                nodes[-1].nodes.append(carried)
        stack[:] = nodes


def _node_maker(node_map: dict, default_node):
    """Parser.convert_node as one call: the constructors that only set the children and
    their parents (``BaseNode.__init__``, most of them) are inlined, and no KeyError is
    raised for the nonterminals without a class of their own."""
    plain = {name: cls for name, cls in node_map.items() if cls.__init__ is BaseNode.__init__}
    special = {name: cls for name, cls in node_map.items() if name not in plain}
    generic = default_node.__init__ is Node.__init__
    make = object.__new__

    def node(nonterminal, children):
        cls = plain.get(nonterminal)
        if cls is None:
            cls = special.get(nonterminal)
            if cls is not None:
                return cls(children)
            if nonterminal == "suite":
                children = [children[0]] + children[2:-1]     # no INDENT/DEDENT leaves (as parso)
            if not generic:
                return default_node(nonterminal, children)
            new = make(default_node)
            new.type = nonterminal
        else:
            new = make(cls)
        new.children, new.parent = children, None
        for child in children:
            child.parent = new
        return new

    return node


def parse(grammar, text: str):
    """``grammar.parse(text)`` (error recovery on, no caches) with `FastParser`; a large
    buffer's tokens come from a forked child (`forked_tokens`) while this loop parses."""
    lines = split_lines(text, keepends=True)
    tokenizer = fast_tokens.tokenizer(grammar)
    tokens = forked_tokens.tokens(tokenizer, lines)
    if tokens is not None:
        try:
            return FastParser(grammar._pgen_grammar, error_recovery=True).parse(tokens=tokens)
        except forked_tokens.TokensLost:
            pass                                    # parse again, tokenizing here
        finally:
            tokens.close()                          # (stops the child if the parse raised)
    tokens = tokenizer(lines)
    return FastParser(grammar._pgen_grammar, error_recovery=True).parse(tokens=tokens)
