"""parso's tokenizer, made cheaper per token; the same tokens.

``tokenize_lines`` below is parso 0.8's (``parso/python/tokenize.py``, MIT licence, by
David Halter and contributors), copied with three changes on the path every token takes.
A 10,000-line file has ~110,000 tokens, and this loop was half of opening it:

* tokens are plain tuples ``(type, string, start_pos, prefix)`` (parso makes a named
  tuple per token, through a Python-level ``__new__``); `fast_parse` reads both;
* one ``match.group(1, 2, 3)`` call instead of three group calls and a span call (the
  token starts where the whitespace group ends: both match from ``pos``);
* parso's five string, comment, newline and continuation checks are nested under one
  test of the token's first character, each ending its pass of the loop, so an operator
  goes past them to parso's last branch at once: no token starting with one of
  `_OPERATOR_STARTS` is any of those (numbers such as ``.5`` are taken earlier, as in
  parso).

`tests/test_fast_parse.py` compares the tokens with parso's on every file of the project
and on randomly broken buffers. The helpers (f-strings, illegal names) are parso's own.
"""
# (parso's code below keeps its own style and comments.)
# flake8: noqa

from __future__ import annotations

import re
from typing import Iterable, Iterator, List, Tuple

from parso.python.token import PythonTokenTypes
from parso.python.tokenize import (BOM_UTF8_STRING, MAX_UNICODE, FStringNode, _close_fstring_if_necessary,
                                   _find_fstring_string, _get_token_collection,
                                   _split_illegal_unicode_name, group, maybe)

STRING = PythonTokenTypes.STRING
NAME = PythonTokenTypes.NAME
NUMBER = PythonTokenTypes.NUMBER
OP = PythonTokenTypes.OP
NEWLINE = PythonTokenTypes.NEWLINE
INDENT = PythonTokenTypes.INDENT
DEDENT = PythonTokenTypes.DEDENT
ENDMARKER = PythonTokenTypes.ENDMARKER
ERRORTOKEN = PythonTokenTypes.ERRORTOKEN
ERROR_DEDENT = PythonTokenTypes.ERROR_DEDENT
FSTRING_START = PythonTokenTypes.FSTRING_START
FSTRING_STRING = PythonTokenTypes.FSTRING_STRING
FSTRING_END = PythonTokenTypes.FSTRING_END

_OPERATOR_STARTS = frozenset("()[]{}:;,.+-*/%&|^~<>=!@")

# A line of ASCII names, numbers, operators and spaces, perhaps a comment, then a newline:
# no string, continuation, tab or f-string can start in it. Each of its characters starts a
# token (or spaces before one), so the pseudo-token expression's successive matches from
# the line's start (``findall``) are the tokens parso's loop matches one by one.
simple = re.compile(r'[ \w()\[\]{}:;,.+\-*/%&|^~<>=!@]*(?:#[^\r\n]*)?\r?\n\Z', re.ASCII).match
# parso's pseudo-token expression for such lines: the same alternatives in parso's order, less
# those that need a quote or a backslash (strings, f-strings, continuations), which can never
# match there, and with names tried first. A name starts with a letter or ``_``, where none of
# the alternatives before it in parso's order (end, comment, number, operator) can match; a
# digit still goes to the numbers. So each match is parso's, ~1.5x sooner. The pieces are
# parso 0.8's (`_create_token_collection`); `_simple_tokens` checks they are in its expression.
_NAME = '([A-Za-z_0-9\u0080-' + MAX_UNICODE + ']+)'
_COMMENT = r'#[^\r\n]*'
_EXPONENT = r'[eE][-+]?[0-9](?:_?[0-9])*'
_FLOAT = group(group(r'[0-9](?:_?[0-9])*\.(?:[0-9](?:_?[0-9])*)?', r'\.[0-9](?:_?[0-9])*') + maybe(_EXPONENT),
               r'[0-9](?:_?[0-9])*' + _EXPONENT)
_NUMBER = group(group(r'[0-9](?:_?[0-9])*[jJ]', _FLOAT + r'[jJ]'), _FLOAT,
                group(r'0[xX](?:_?[0-9a-fA-F])+', r'0[bB](?:_?[01])+', r'0[oO](?:_?[0-7])+',
                      r'(?:0(?:_?0)*|[1-9](?:_?[0-9])*)'))
_OPERATOR = group(r"\*\*=?", r">>=?", r"<<=?", r"//=?", r"->", r"[+\-*/%&@`|^!=<>]=?", r"~")


def _simple_tokens(version_info, pseudo_token):
    """The expression for `simple` lines (above); parso's own if its pieces ever differ."""
    special = group(":=?" if version_info >= (3, 8) else ":", r'\.\.\.', r'\r\n?', r'\n', r'[;.,@]')
    funny = group(_OPERATOR, '[][(){}]', special)
    if not all(piece in pseudo_token.pattern for piece in (_NAME, _COMMENT, _NUMBER, funny)):
        return pseudo_token
    return re.compile(group(r'[ \f\t]*', capture=True)
                      + group(r'(?![0-9])' + _NAME, r'\Z', _COMMENT, _NUMBER, funny, capture=True))


# parso's `always_break_tokens` that are names: inside brackets, one of them resets the
# bracket level (error recovery), which only parso's loop below does. (Found as the end of
# a word: ``1return`` is a number and a name.)
_BREAKS = re.compile(r'(?:import|class|def|try|except|finally|while|with|return|continue|break'
                     r'|del|pass|global|assert|nonlocal)\b', re.ASCII)


def _no_break(line: str, paren_level: int) -> bool:
    """No name of `_BREAKS` in `line` is reached inside brackets: there is none, or the
    only one is the line's first token outside brackets."""
    found = _BREAKS.search(line)
    return found is None or (paren_level == 0 and not line[:found.start()].strip(' ')
                             and _BREAKS.search(line, found.end()) is None)


_SIMPLE: dict = {}      # (major, minor) -> `_simple_tokens(...).findall`


def tokenizer(grammar):
    """``grammar._tokenizer`` with this module's `tokenize_lines`."""
    version_info = grammar.version_info

    def tokenize(lines, **kwargs):
        return tokenize_lines(lines, version_info=version_info, **kwargs)
    return tokenize


def tokenize_lines(
    lines: Iterable[str],
    *,
    version_info: Tuple[int, int],
    indents: List[int] = None,
    start_pos: Tuple[int, int] = (1, 0),
    is_first_token=True,
) -> Iterator[PythonToken]:
    """
    A heavily modified Python standard library tokenizer.

    Additionally to the default information, yields also the prefix of each
    token. This idea comes from lib2to3. The prefix contains all information
    that is irrelevant for the parser like newlines in parentheses or comments.
    """
    def dedent_if_necessary(start):
        while start < indents[-1]:
            if start > indents[-2]:
                yield (ERROR_DEDENT, '', (lnum, start), '')
                indents[-1] = start
                break
            indents.pop()
            yield (DEDENT, '', spos, '')

    def indent_to(start):           # (a line's first token, outside brackets, at another column)
        if start > indents[-1]:
            yield (INDENT, '', spos, '')
            indents.append(start)
        yield from dedent_if_necessary(start)

    pseudo_token, single_quoted, triple_quoted, endpats, whitespace, \
        fstring_pattern_map, always_break_tokens, = \
        _get_token_collection(version_info)
    findall = _SIMPLE.get(version_info[:2])
    if findall is None:
        findall = _SIMPLE[version_info[:2]] = _simple_tokens(version_info, pseudo_token).findall
    paren_level = 0  # count parentheses
    if indents is None:
        indents = [0]
    max_ = 0
    numchars = '0123456789'
    contstr = ''
    contline: str
    contstr_start: Tuple[int, int]
    endprog: Pattern
    # We start with a newline. This makes indent at the first position
    # possible. It's not valid Python, but still better than an INDENT in the
    # second line (and not in the first). This makes quite a few things in
    # Jedi's fast parser possible.
    new_line = True
    prefix = ''  # Should never be required, but here for safety
    additional_prefix = ''
    lnum = start_pos[0] - 1
    fstring_stack: List[FStringNode] = []
    for line in lines:  # loop over lines in stream
        lnum += 1
        pos = 0
        max_ = len(line)
        if is_first_token:
            if line.startswith(BOM_UTF8_STRING):
                additional_prefix = BOM_UTF8_STRING
                line = line[1:]
                max_ = len(line)

            # Fake that the part before was already parsed.
            line = '^' * start_pos[1] + line
            pos = start_pos[1]
            max_ += start_pos[1]

            is_first_token = False

        if contstr:                                         # continued string
            endmatch = endprog.match(line)  # noqa: F821
            if endmatch:
                pos = endmatch.end(0)
                yield (
                    STRING, contstr + line[:pos],
                    contstr_start, prefix)  # noqa: F821
                contstr = ''
                contline = ''
            else:
                contstr = contstr + line
                contline = contline + line
                continue

        if pos == 0 and not fstring_stack and simple(line) is not None and _no_break(line, paren_level):
            # A line of names, numbers and operators only: its tokens in one C call, and the
            # steps of the loop below that such tokens reach (`simple`).
            pos = 0
            for whitespace_, token, name in findall(line):
                start = pos + len(whitespace_)
                if start == max_:                        # (the empty match at the end)
                    break
                pos = start + len(token)
                spos = (lnum, start)
                prefix = additional_prefix + whitespace_
                additional_prefix = ''
                initial = token[0]
                if initial == '\n' or initial == '\r':
                    if not new_line and paren_level == 0:
                        yield (NEWLINE, token, spos, prefix)
                    else:
                        additional_prefix = prefix + token
                    new_line = True
                    continue
                if initial == '#':
                    additional_prefix = prefix + token
                    continue
                if new_line:
                    new_line = False
                    if paren_level == 0 and start != indents[-1]:
                        yield from indent_to(start)
                if name:
                    yield (NAME, token, spos, prefix)
                elif initial in numchars or (initial == '.' and token != '.' and token != '...'):
                    yield (NUMBER, token, spos, prefix)
                else:
                    if token in '([{':
                        paren_level += 1
                    elif token in ')]}':
                        if paren_level:
                            paren_level -= 1
                    yield (OP, token, spos, prefix)
            continue

        while pos < max_:
            if fstring_stack:
                tos = fstring_stack[-1]
                if not tos.is_in_expr():
                    string, pos = _find_fstring_string(endpats, fstring_stack, line, lnum, pos)
                    if string:
                        yield (
                            FSTRING_STRING, string,
                            tos.last_string_start_pos,  # type: ignore[arg-type]
                            # Never has a prefix because it can start anywhere and
                            # include whitespace.
                            ''
                        )
                        tos.previous_lines = ''
                        continue
                    if pos == max_:
                        break

                rest = line[pos:]
                fstring_end_token, additional_prefix, quote_length = _close_fstring_if_necessary(
                    fstring_stack,
                    rest,
                    lnum,
                    pos,
                    additional_prefix,
                )
                pos += quote_length
                if fstring_end_token is not None:
                    yield fstring_end_token
                    continue

            # in an f-string, match until the end of the string
            if fstring_stack:
                string_line = line
                for fstring_stack_node in fstring_stack:
                    quote = fstring_stack_node.quote
                    end_match = endpats[quote].match(line, pos)
                    if end_match is not None:
                        end_match_string = end_match.group(0)
                        if len(end_match_string) - len(quote) + pos < len(string_line):
                            string_line = line[:pos] + end_match_string[:-len(quote)]
                pseudomatch = pseudo_token.match(string_line, pos)
            else:
                pseudomatch = pseudo_token.match(line, pos)

            if pseudomatch:
                whitespace_, token, name = pseudomatch.group(1, 2, 3)
                prefix = additional_prefix + whitespace_
                additional_prefix = ''
                start = pos + len(whitespace_)
                pos = start + len(token)
                spos = (lnum, start)
                if token == '':
                    assert prefix
                    additional_prefix = prefix
                    # This means that we have a line with whitespace/comments at
                    # the end, which just results in an endmarker.
                    break
                initial = token[0]
            else:
                match = whitespace.match(line, pos)
                initial = line[match.end()]  # type: ignore[union-attr]
                start = match.end()  # type: ignore[union-attr]
                spos = (lnum, start)

            if new_line and initial not in '\r\n#' and (initial != '\\' or pseudomatch is None):
                new_line = False
                if paren_level == 0 and not fstring_stack and start != indents[-1]:
                    yield from indent_to(start)

            if not pseudomatch:  # scan for tokens
                match = whitespace.match(line, pos)
                if new_line and paren_level == 0 and not fstring_stack:
                    yield from dedent_if_necessary(match.end())  # type: ignore[union-attr]
                pos = match.end()  # type: ignore[union-attr]
                new_line = False
                yield (
                    ERRORTOKEN, line[pos], (lnum, pos),
                    additional_prefix + match.group(0)  # type: ignore[union-attr]
                )
                additional_prefix = ''
                pos += 1
                continue

            if (initial in numchars                      # ordinary number
                    or (initial == '.' and token != '.' and token != '...')):
                yield (NUMBER, token, spos, prefix)
            elif name is not None:                            # ordinary name
                if token in always_break_tokens and (fstring_stack or paren_level):
                    fstring_stack[:] = []
                    paren_level = 0
                    # We only want to dedent if the token is on a new line.
                    m = re.match(r'[ \f\t]*$', line[:start])
                    if m is not None:
                        yield from dedent_if_necessary(m.end())
                if token.isidentifier():
                    yield (NAME, token, spos, prefix)
                else:
                    yield from _split_illegal_unicode_name(token, spos, prefix)
            else:
                if initial not in _OPERATOR_STARTS:   # (strings, comments, newlines, continuations)
                    if initial in '\r\n':
                        if any(not f.allow_multiline() for f in fstring_stack):
                            fstring_stack.clear()

                        if not new_line and paren_level == 0 and not fstring_stack:
                            yield (NEWLINE, token, spos, prefix)
                        else:
                            additional_prefix = prefix + token
                        new_line = True
                        continue
                    elif initial == '#':  # Comments
                        assert not token.endswith("\n") and not token.endswith("\r")
                        if fstring_stack and fstring_stack[-1].is_in_expr():
                            # `#` is not allowed in f-string expressions
                            yield (ERRORTOKEN, initial, spos, prefix)
                            pos = start + 1
                        else:
                            additional_prefix = prefix + token
                        continue
                    elif token in triple_quoted:
                        endprog = endpats[token]
                        endmatch = endprog.match(line, pos)
                        if endmatch:                                # all on one line
                            pos = endmatch.end(0)
                            token = line[start:pos]
                            yield (STRING, token, spos, prefix)
                            continue
                        contstr_start = spos                        # multiple lines
                        contstr = line[start:]
                        contline = line
                        break

                    # Check up to the first 3 chars of the token to see if
                    #  they're in the single_quoted set. If so, they start
                    #  a string.
                    # We're using the first 3, because we're looking for
                    #  "rb'" (for example) at the start of the token. If
                    #  we switch to longer prefixes, this needs to be
                    #  adjusted.
                    # Note that initial == token[:1].
                    # Also note that single quote checking must come after
                    #  triple quote checking (above).
                    elif initial in single_quoted or \
                            token[:2] in single_quoted or \
                            token[:3] in single_quoted:
                        if token[-1] in '\r\n':                       # continued string
                            # This means that a single quoted string ends with a
                            # backslash and is continued.
                            contstr_start = lnum, start
                            endprog = (endpats.get(initial) or endpats.get(token[1])
                                       or endpats.get(token[2]))  # type: ignore[assignment]
                            contstr = line[start:]
                            contline = line
                            break
                        yield (STRING, token, spos, prefix)         # ordinary string
                        continue
                    elif token in fstring_pattern_map:  # The start of an fstring.
                        fstring_stack.append(FStringNode(fstring_pattern_map[token]))
                        yield (FSTRING_START, token, spos, prefix)
                        continue
                    elif initial == '\\' and line[start:] in ('\\\n', '\\\r\n', '\\\r'):  # continued stmt
                        additional_prefix += prefix + line[start:]
                        break
                if token in '([{':
                    if fstring_stack:
                        fstring_stack[-1].open_parentheses(token)
                    else:
                        paren_level += 1
                elif token in ')]}':
                    if fstring_stack:
                        fstring_stack[-1].close_parentheses(token)
                    else:
                        if paren_level:
                            paren_level -= 1
                elif token.startswith(':') and fstring_stack \
                        and fstring_stack[-1].parentheses_count \
                        - fstring_stack[-1].format_spec_count == 1:
                    # `:` and `:=` both count
                    fstring_stack[-1].format_spec_count += 1
                    token = ':'
                    pos = start + 1

                yield (OP, token, spos, prefix)

    if contstr:
        yield (ERRORTOKEN, contstr, contstr_start, prefix)
        if contstr.endswith('\n') or contstr.endswith('\r'):
            new_line = True

    if fstring_stack:
        tos = fstring_stack[-1]
        if tos.previous_lines:
            yield (
                FSTRING_STRING, tos.previous_lines,
                tos.last_string_start_pos,
                # Never has a prefix because it can start anywhere and
                # include whitespace.
                ''
            )

    end_pos = lnum, max_
    # As the last position we just take the maximally possible position. We
    # remove -1 for the last new line.
    for indent in indents[1:]:
        indents.pop()
        yield (DEDENT, '', end_pos, '')
    yield (ENDMARKER, '', end_pos, additional_prefix)
