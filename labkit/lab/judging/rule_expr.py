"""The claims' rules as expressions: parsed by Python's `ast`, evaluated by walking the tree.

A rule is one expression over named numbers (`x >= 1.5`, `1.05 <= x <= 1.5`,
`share_after/share_before <= 0.33 and gain >= 1.2`): numbers, names, `True` and `False`,
`+ - * /` (and a sign), the six comparisons (chained too), `and`, `or`, `not` and
parentheses. Nothing else parses: no calls, attributes, subscripts or lambdas, so a rule
can only compute with the values it is given. The results are Python's own for the same
text (`and`/`or` return an operand, a comparison chain stops at the first false link,
division by zero raises ZeroDivisionError).

    evaluate("x >= 1.5", {"x": 2.0})   # True
    names("mem <= 0.5 and tps >= 2")   # frozenset({'mem', 'tps'})
"""
from __future__ import annotations

import ast
import functools
import operator

_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.Div: operator.truediv}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg, ast.Not: operator.not_}
_COMPARE = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
            ast.GtE: operator.ge, ast.Eq: operator.eq, ast.NotEq: operator.ne}


def _check(node: ast.AST, text: str) -> None:
    """Refuse any node outside the rules' grammar, naming the text and the construct."""
    ok = (
        isinstance(node, ast.Expression)
        or isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
        or isinstance(node, ast.Constant) and type(node.value) in (int, float, bool)
        or isinstance(node, ast.BinOp) and type(node.op) in _BINARY
        or isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY
        or isinstance(node, ast.Compare) and all(type(op) in _COMPARE for op in node.ops)
        or isinstance(node, ast.BoolOp) and isinstance(node.op, (ast.And, ast.Or))
    )
    if not ok:
        what = type(getattr(node, "op", None) or node).__name__
        raise ValueError(f"rule {text!r}: {what} is not allowed in a rule (numbers, names, "
                         "+ - * /, comparisons, and/or/not, parentheses, True/False)")
    for child in ast.iter_child_nodes(node):
        if not isinstance(child, (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop,
                                  ast.boolop)):
            _check(child, text)


@functools.lru_cache(maxsize=512)
def parse(text: str) -> ast.Expression:
    """The checked tree of one rule; ValueError naming the text when it is not a rule."""
    if not isinstance(text, str):
        raise TypeError(f"rule must be a str, not {type(text).__name__}")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"rule {text!r} is not an expression: {exc.msg}") from None
    _check(tree, text)
    return tree


@functools.lru_cache(maxsize=512)
def names(text: str) -> frozenset[str]:
    """The names a rule needs values for."""
    return frozenset(n.id for n in ast.walk(parse(text)) if isinstance(n, ast.Name))


def evaluate(text: str, values: dict):
    """The rule's value with `values` (name -> number); ValueError naming every name it
    needs that `values` lacks."""
    missing = names(text) - set(values)
    if missing:
        raise ValueError(f"rule {text!r} needs values for {sorted(missing)}")
    return _value(parse(text).body, values)


def _value(node: ast.expr, values: dict):
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return values[node.id]
    if isinstance(node, ast.BinOp):
        return _BINARY[type(node.op)](_value(node.left, values), _value(node.right, values))
    if isinstance(node, ast.UnaryOp):
        return _UNARY[type(node.op)](_value(node.operand, values))
    if isinstance(node, ast.BoolOp):
        # Python's short circuit: `and` gives the first false operand (else the last),
        # `or` the first true one (else the last).
        stop = (lambda v: not v) if isinstance(node.op, ast.And) else bool
        for operand in node.values:
            result = _value(operand, values)
            if stop(result):
                break
        return result
    # A Compare: each link evaluated once, the chain stops at the first false one.
    left = _value(node.left, values)
    for op, right_node in zip(node.ops, node.comparators):
        right = _value(right_node, values)
        result = _COMPARE[type(op)](left, right)
        if not result:
            return result
        left = right
    return result
