"""The C, C++ and CUDA text a candidate carries, read for the L1 checker.

Native code hides in Python strings (cpp_source, load_inline's sources, anything built
from literals), so every string the candidate's file spells out is scanned: each
constant-folded string expression once (`"cudaStream" + "Create"` is read whole), its
comments blanked out first so that a comment naming a function is not a call of it.
Positions are mapped back to the Python file (line and column of the text in the string
literal)."""

import ast
import re

_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
# A qualified call: torch::relu(x), at::cuda::getStreamFromPool(), torch::empty<float>(...).
_QUALIFIED_CALL = re.compile(r"\b((?:[A-Za-z_]\w*::)+[A-Za-z_]\w*)\s*(?:<[^<>;(){}]*>)?\s*\(")
# A member call: x.clamp_min(0), x->sum(), x.data_ptr<float>(), x.template data_ptr<T>().
_MEMBER_CALL = re.compile(r"(?:\.|->)\s*(?:template\s+)?([A-Za-z_]\w*)\s*(?:<[^<>;(){}]*>)?\s*\(")


class NativeText:
    """One string expression of the candidate: its folded text and where it starts."""

    def __init__(self, text, node, facts):
        self.raw = text
        self.text = _blank_comments(text)
        self.node = node
        self.line, self.col = facts.position(node)
        self._exact = isinstance(node, ast.Constant)
        if self._exact:
            literal = facts.source_line(node.lineno)[self.col - 1:]
            letters = len(literal) - len(literal.lstrip("rRbBuUfF"))
            quotes = 3 if literal[letters:letters + 3] in ('"""', "'''") else 1
            self.col += letters + quotes

    def position(self, offset):
        """(line, col), 1-based, of text offset `offset` in the Python file: exact for a
        single literal without escaped line breaks, the expression's start otherwise."""
        if not self._exact:
            return self.line, self.col
        before = self.text[:offset]
        lines = before.count("\n")
        if lines == 0:
            return self.line, self.col + offset
        return self.line + lines, offset - before.rfind("\n")

    def qualified_calls(self):
        """(offset, 'torch::relu') for each namespace-qualified call."""
        for found in _QUALIFIED_CALL.finditer(self.text):
            yield found.start(1), found.group(1)

    def member_calls(self):
        """(offset, 'clamp_min') for each `.name(` / `->name(` call."""
        for found in _MEMBER_CALL.finditer(self.text):
            yield found.start(1), found.group(1)


_NATIVE_MARKERS = re.compile(r'#\s*include\b|__global__|__device__|extern\s+"C"|PYBIND11_MODULE|'
                             r'#\s*pragma\b|\btorch::|\bat::|\bc10::')


def looks_native(text):
    """Whether a string reads as C/C++/CUDA source (an include, a kernel qualifier,
    extern "C", a torch C++ namespace), not as prose or Python."""
    return _NATIVE_MARKERS.search(text) is not None


def _blank_comments(text):
    """Comments replaced by spaces (line breaks kept), so offsets stay valid."""
    return _COMMENT.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def native_texts(facts, nodes):
    """A NativeText for each maximal constant-foldable string expression among `nodes`
    (the parts of a folded concatenation or f-string are not scanned again alone)."""
    texts = []
    inside = set()
    for node in nodes:
        if isinstance(node, (ast.BinOp, ast.JoinedStr)) and id(node) not in inside:
            text = facts.fold_string(node)
            if text is not None:
                inside.update(id(n) for n in ast.walk(node))
                texts.append(NativeText(text, node, facts))
    for node in nodes:
        if id(node) not in inside and isinstance(node, ast.Constant) \
                and isinstance(node.value, str):
            texts.append(NativeText(node.value, node, facts))
    return texts
