"""Shrinking a KernelBench task's module-level sizes by rewriting its AST before exec.

KernelBench files carry sizes for big GPUs (level1/19_ReLU.py: 4096 x 393216 floats,
6.4 GB). Rewriting the module's constant assignments lets the SAME file run on a CPU or a
small GPU: no copy of the task to maintain, and line numbers stay those of the file.

Rules (README.md documents them for users):
- only module-level assignments to plain names whose value is an integer constant or an
  integer constant expression (`4096`, `16 * 1024`, `2 ** 14`) are touched; tuple
  assignments (`M, N = 1024, 2048`) count element by element;
- so do the integer elements of a tuple or list literal assigned to a name, named
  `name[i]` (`input_shape = (32768,)` has `input_shape[0]`; in `sizes = [1024] * 16`
  the literal's element is `sizes[0]`): KernelBench shapes such as HingeLoss's
  `input_shape` must shrink together with the batch they broadcast against;
- `sizes[name]` replaces the value of that name (an unknown name is an error: a typo must
  not silently run the full size);
- otherwise, when `scale != 1`, a value >= 16 becomes max(1, int(value * scale)); values
  below 16 (kernel sizes, dims, small channel counts) are left alone.
"""

import ast
import operator

SCALE_THRESHOLD = 16

_INT_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
            ast.FloorDiv: operator.floordiv, ast.Pow: operator.pow,
            ast.LShift: operator.lshift, ast.Mod: operator.mod}


def constant_int(node):
    """The integer value of a constant integer expression, or None when it is not one."""
    if isinstance(node, ast.Constant):
        value = node.value
        return value if isinstance(value, int) and not isinstance(value, bool) else None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = constant_int(node.operand)
        return None if inner is None else -inner
    if isinstance(node, ast.BinOp) and type(node.op) in _INT_OPS:
        left, right = constant_int(node.left), constant_int(node.right)
        if left is None or right is None:
            return None
        if isinstance(node.op, ast.Pow) and not 0 <= right <= 64:
            return None  # refuse to evaluate absurd powers
        try:
            return _INT_OPS[type(node.op)](left, right)
        except (ZeroDivisionError, ValueError):
            return None
    return None


def _sequence_literal(node):
    """The tuple or list literal of `node` (`(3, 224)`, `[1024] * 16`), or None."""
    if isinstance(node, (ast.Tuple, ast.List)):
        return node
    if (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult)
            and isinstance(node.left, (ast.Tuple, ast.List))):
        return node.left
    return None


def _size_slots(tree):
    """(name, value node, setter) for every module-level integer size assignment."""
    for stmt in tree.body:
        pairs = []  # (name, holder, field, index): the value is holder.field[index]
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    pairs.append((target.id, stmt, "value", None))
                elif (isinstance(target, ast.Tuple) and isinstance(stmt.value, ast.Tuple)
                      and len(target.elts) == len(stmt.value.elts)):
                    for i, elt in enumerate(target.elts):
                        if isinstance(elt, ast.Name):
                            pairs.append((elt.id, stmt.value, "elts", i))
        elif (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
              and stmt.value is not None):
            pairs.append((stmt.target.id, stmt, "value", None))
        for name, holder, field, index in pairs:
            node = getattr(holder, field) if index is None else holder.elts[index]
            if constant_int(node) is not None:
                yield name, node, (holder, field, index)
                continue
            sequence = _sequence_literal(node) if index is None else None
            for i, element in enumerate(sequence.elts if sequence else ()):
                if constant_int(element) is not None:
                    yield f"{name}[{i}]", element, (sequence, "elts", i)


def module_sizes(tree):
    """{name: value} of every size constant of a parsed module, in file order."""
    return {name: constant_int(node) for name, node, _ in _size_slots(tree)}


def _replace(slot, old, value):
    holder, field, index = slot
    new = ast.copy_location(ast.Constant(value=value), old)
    ast.fix_missing_locations(new)
    if index is None:
        setattr(holder, field, new)
    else:
        holder.elts[index] = new


def scaled(value, scale):
    if scale == 1 or value < SCALE_THRESHOLD:
        return value
    return max(1, int(value * scale))


def rewrite_sizes(tree, sizes=None, scale=1.0, where="task"):
    """Rewrites `tree` (a parsed module) in place; returns {name: (old, new)} for every
    constant it changed. Raises ValueError for a `sizes` name the module does not have."""
    sizes = dict(sizes or {})
    slots = list(_size_slots(tree))
    known = {name for name, _, _ in slots}
    unknown = sorted(set(sizes) - known)
    if unknown:
        raise ValueError(
            f"task.sizes names {', '.join(unknown)}, but {where} has no module-level integer "
            f"constant of that name (it has: {', '.join(sorted(known)) or 'none'})")
    changes = {}
    for name, node, slot in slots:
        old = constant_int(node)
        new = sizes[name] if name in sizes else scaled(old, scale)
        if new != old:
            _replace(slot, node, new)
            changes[name] = (old, new)
    return changes
