"""Operator schemas for ``ndgrad.library``: parsing torch's schema strings
(``"ns::name.overload(Tensor x, float s=3., *, Tensor(a!) out) -> Tensor"``), inferring one from
a function's type hints (``infer_schema``, with torch's rules and errors) and binding a call's
arguments to a schema (torch's argument errors and conversions).

Example:
    >>> from ndgrad._library_schema import parse_schema
    >>> s = parse_schema("mylib::foo(Tensor x, float s=3.0, *, int[] dims=[]) -> Tensor")
    >>> str(s), [a.name for a in s.arguments], s.arguments[2].kwarg_only
    ('mylib::foo(Tensor x, float s=3., *, int[] dims=[]) -> Tensor', ['x', 's', 'dims'], True)
"""

from __future__ import annotations

import collections.abc
import dataclasses
import inspect
import re
import typing
from types import GenericAlias
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from . import _dtype
from .tensor import Tensor, device

__all__ = ["Argument", "FunctionSchema", "parse_schema", "infer_schema", "bind"]

_NO_DEFAULT = object()


@dataclasses.dataclass
class Argument:
    """One argument (or return) of a schema: its type as written (``Tensor?``, ``SymInt[]``
    ...), name, default (``_NO_DEFAULT`` when none), whether keyword-only, and its alias
    annotation (``a!`` for a mutated tensor)."""

    type: str
    name: str = ""
    default: Any = _NO_DEFAULT
    default_text: str = ""
    kwarg_only: bool = False
    alias: Optional[str] = None

    @property
    def has_default(self) -> bool:
        return self.default is not _NO_DEFAULT

    @property
    def is_write(self) -> bool:
        return self.alias is not None and self.alias.endswith("!")

    def type_str(self) -> str:
        if self.alias is None:
            return self.type
        # the alias annotation sits right after "Tensor"
        return f"Tensor({self.alias}){self.type[len('Tensor'):]}"

    def __str__(self) -> str:
        s = self.type_str()
        if self.name:
            s += " " + self.name
        if self.has_default:
            s += "=" + self.default_text
        return s


@dataclasses.dataclass
class FunctionSchema:
    """A parsed operator schema; ``str()`` prints it as torch does."""

    name: str                 # "ns::name" (or "name" when no namespace was given)
    overload_name: str
    arguments: List[Argument]
    returns: List[Argument]
    returns_tuple: bool = False     # "-> (Tensor)" vs "-> Tensor"

    def __str__(self) -> str:
        args, star = [], False
        for a in self.arguments:
            if a.kwarg_only and not star:
                args.append("*")
                star = True
            args.append(str(a))
        name = self.name + (f".{self.overload_name}" if self.overload_name else "")
        if len(self.returns) == 1 and not self.returns_tuple:
            ret = str(self.returns[0])
        else:
            ret = "(" + ", ".join(str(r) for r in self.returns) + ")"
        return f"{name}({', '.join(args)}) -> {ret}"

    def __repr__(self) -> str:
        return str(self)


# ---- parsing ----

_TOKEN = re.compile(r'\s*(->|"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|[A-Za-z_][\w.:]*|'
                    r'-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+|[()\[\],=*?!|])')


def _schema_error(text: str, pos: int, what: str) -> RuntimeError:
    return RuntimeError(f"{what} here:\n{text}\n{' ' * pos}~~~~~~ <--- HERE\n")


def _split_top(s: str, sep: str = ",") -> List[str]:
    out: List[str] = []
    cur: List[str] = []
    depth, quote = 0, None
    for ch in s:
        if quote:
            cur.append(ch)
            if ch == quote:
                quote = None
            continue
        if ch in "\"'":
            quote = ch
        elif ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == sep and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur))
    return out


_TYPE_RE = re.compile(r"^(?P<base>[A-Za-z_]\w*)(?:\((?P<alias>[^)]*)\))?"
                      r"(?P<suffix>(?:\?|\[\d*\])*)$")


def _parse_value(text: str, typ: str) -> Any:
    t = text.strip()
    if t == "None":
        return None
    if t in ("True", "False"):
        return t == "True"
    if t[:1] in "\"'":
        return t[1:-1]
    if t.startswith("["):
        inner = t[1:-1].strip()
        return [_parse_value(v, typ.split("[")[0]) for v in _split_top(inner)] if inner else []
    if re.fullmatch(r"-?\d+", t):
        v = int(t)
        if typ.startswith("float"):
            return float(v)
        if "[" in typ:             # "int[2] k=1": one number for every element
            n = re.search(r"\[(\d*)\]", typ)
            return [v] * int(n.group(1)) if n and n.group(1) else [v]
        return v
    if re.fullmatch(r"-?(\d+\.\d*|\.\d+|\d+(\.\d*)?[eE][-+]?\d+)", t):
        return float(t)
    if t in ("inf", "-inf", "nan"):
        return float(t)
    if typ.startswith("ScalarType"):
        dt = getattr(_dtype, t, None)
        if isinstance(dt, _dtype.dtype):
            return dt
    if typ.startswith("Device"):
        return device(t)
    return t


def _format_value(v: Any, typ: str) -> str:
    if v is None:
        return "None"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, float):
        if v == int(v) and abs(v) < 1e16:
            return f"{int(v)}."
        return repr(v)
    if isinstance(v, str):
        return f'"{v}"'
    if isinstance(v, list):
        n = re.search(r"\[(\d+)\]", typ)
        if n and v and all(x == v[0] for x in v) and len(v) == int(n.group(1)):
            return _format_value(v[0], typ)
        return "[" + ", ".join(_format_value(x, typ) for x in v) + "]"
    if isinstance(v, _dtype.dtype):
        return str(v).replace("ndgrad.", "").replace("torch.", "")
    return str(v)


def _parse_arg(text: str, full: str, kwarg_only: bool, is_return: bool) -> Argument:
    part = text.strip()
    default_text = None
    if "=" in part and not is_return:
        part, default_text = (s.strip() for s in part.split("=", 1))
    pieces = part.rsplit(None, 1) if " " in part.replace("( ", "(") else [part]
    if len(pieces) == 2 and not pieces[1].endswith(")") and not pieces[1].startswith("("):
        typ, name = pieces
    elif is_return:
        typ, name = part, ""
    else:
        raise _schema_error(full, max(full.find(part), 0), "expected ident but found 'eof'")
    typ = typ.replace(" ", "")
    m = _TYPE_RE.match(typ)
    if m is None:
        raise _schema_error(full, max(full.find(typ), 0), f"unknown type specifier '{typ}'")
    base, alias, suffix = m.group("base"), m.group("alias"), m.group("suffix")
    if base not in _KNOWN_TYPES:
        raise _schema_error(full, max(full.find(base), 0), f"Unknown type name '{base}'")
    arg = Argument(type=base + suffix, name=name, kwarg_only=kwarg_only, alias=alias)
    if default_text is not None:
        arg.default = _parse_value(default_text, arg.type)
        arg.default_text = _format_value(arg.default, arg.type)
    return arg


_KNOWN_TYPES = {"Tensor", "int", "SymInt", "float", "bool", "str", "Scalar", "ScalarType",
                "Device", "Layout", "MemoryFormat", "Generator", "Dimname", "Storage", "Any",
                "complex", "Stream"}


def parse_schema(text: str, *, name_required: bool = True) -> FunctionSchema:
    """Parse torch's schema notation; a malformed schema raises RuntimeError with torch's
    "... here:" pointer."""
    s = text.strip()
    open_at = s.find("(")
    if open_at < 0:
        m = re.match(r"^[\w:.]+", s)
        pos = m.end() if m else 0
        while pos < len(s) and s[pos] == " ":
            pos += 1
        found = "ident" if pos < len(s) and (s[pos].isalpha() or s[pos] == "_") else "eof"
        raise _schema_error(s, pos, f"expected eof but found '{found}'" if found == "ident"
                            else "expected '(' but found 'eof'")
    head = s[:open_at].strip()
    if name_required and not head:
        raise _schema_error(s, 0, "expected ident but found '('")
    depth, close_at = 0, -1
    for i in range(open_at, len(s)):
        if s[i] in "([":
            depth += 1
        elif s[i] in ")]":
            depth -= 1
            if depth == 0:
                close_at = i
                break
    if close_at < 0:
        raise _schema_error(s, len(s), "expected ')' but found 'eof'")
    rest = s[close_at + 1:].strip()
    if not rest.startswith("->"):
        raise _schema_error(s, close_at + 1, "expected '->' but found "
                            f"'{rest[:1] or 'eof'}'")
    name, _, overload = head.partition(".")
    args, kw = [], False
    for piece in _split_top(s[open_at + 1:close_at]):
        if piece.strip() == "*":
            kw = True
            continue
        args.append(_parse_arg(piece, s, kw, False))
    ret_text = rest[2:].strip()
    tuple_ret = ret_text.startswith("(") and ret_text.endswith(")") and \
        not _TYPE_RE.match(ret_text.replace(" ", ""))
    if tuple_ret:
        inner = ret_text[1:-1].strip()
        rets = [_parse_arg(p, s, False, True) for p in _split_top(inner)] if inner else []
    else:
        rets = [_parse_arg(ret_text, s, False, True)]
    return FunctionSchema(name, overload, args, rets, tuple_ret)


# ---- inference from type hints ----

def _derived(base: Any, name: str, seq: bool, seq_of_opt: bool, opt_seq: bool) -> list:
    out: list = [(base, name), (Optional[base], f"{name}?")]

    def seqs(t: Any) -> tuple:
        return (Sequence[t], List[t], GenericAlias(collections.abc.Sequence, (t,)),
                GenericAlias(list, (t,)))
    if seq:
        out += [(s, f"{name}[]") for s in seqs(base)]
    if seq_of_opt:
        out += [(s, f"{name}?[]") for s in seqs(Optional[base])]
    if opt_seq:
        out += [(Optional[s], f"{name}[]?") for s in seqs(base)]
    return out


_NUMBER = Union[int, float, bool]
SUPPORTED_PARAM_TYPES: Dict[Any, str] = dict(
    [p for line in ((Tensor, "Tensor", True, True, False), (int, "SymInt", True, False, True),
                    (float, "float", True, False, True), (bool, "bool", True, False, True),
                    (str, "str", False, False, False), (_NUMBER, "Scalar", True, False, False),
                    (_dtype.dtype, "ScalarType", False, False, False),
                    (device, "Device", False, False, False))
     for p in _derived(*line)])
SUPPORTED_RETURN_TYPES: Dict[Any, str] = {
    Tensor: "Tensor", List[Tensor]: "Tensor[]", list[Tensor]: "Tensor[]", int: "SymInt",
    float: "float", bool: "bool", _NUMBER: "Scalar"}


def infer_schema(prototype_function: Callable, /, *, mutates_args: Any,
                 op_name: Optional[str] = None) -> str:
    """The schema of ``prototype_function`` from its type hints, as torch infers it
    (``Tensor``, ``int`` -> ``SymInt``, ``float``, ``bool``, ``str``, numbers -> ``Scalar``,
    dtypes, devices, their ``Optional``/``Sequence`` forms; mutated tensors get ``(aN!)``).

    Example:
        >>> import ndgrad
        >>> from ndgrad.library import infer_schema
        >>> def f(x: ndgrad.Tensor, n: int = 2) -> ndgrad.Tensor:
        ...     return x * n
        >>> infer_schema(f, mutates_args=(), op_name="f")
        'f(Tensor x, SymInt n=2) -> Tensor'
    """
    sig = inspect.signature(prototype_function)
    glob = getattr(prototype_function, "__globals__", {})
    if type(mutates_args) is not str:
        mutates_args = tuple(mutates_args)

    def fail(what: str) -> typing.NoReturn:
        raise ValueError(f"infer_schema(func): {what} Got func with signature {sig})")

    def resolve(t: Any) -> Any:
        if isinstance(t, str):
            try:
                return eval(t, glob)  # noqa: S307  (a type annotation written as a string)
            except NameError as e:
                fail(f"Unsupported type annotation {t}. It is not a type. ({e}). If you are "
                     "using 'from __future__ import annotations', note that annotations are "
                     "evaluated lazily as strings; make sure all types referenced in "
                     "annotations are importable at module scope, not only inside a local "
                     "function.")
            except Exception as e:
                fail(f"Unsupported type annotation {t}. It is not a type. "
                     f"({type(e).__name__}: {e})")
        origin = typing.get_origin(t)
        if origin is not None and any(isinstance(a, str) for a in typing.get_args(t)):
            return GenericAlias(origin, tuple(resolve(a) for a in typing.get_args(t)))
        return t

    params: List[str] = []
    seen: set = set()
    star = False
    for idx, (name, p) in enumerate(sig.parameters.items()):
        if p.kind not in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            fail("We do not support positional-only args, varargs, or varkwargs.")
        if p.kind == p.KEYWORD_ONLY and not star:
            params.append("*")
            star = True
        if p.annotation is p.empty:
            fail(f"Parameter {name} must have a type annotation.")
        ann = resolve(p.annotation)
        schema_type = SUPPORTED_PARAM_TYPES.get(ann) if _hashable(ann) else None
        if schema_type is None:
            if getattr(ann, "__origin__", None) is tuple:
                targs = typing.get_args(ann)
                if not targs or ann is tuple:
                    as_list: Any = list
                elif len(targs) == 1 or (len(targs) == 2 and targs[1] is Ellipsis):
                    as_list = GenericAlias(list, (targs[0],))
                else:
                    as_list = GenericAlias(list, (Union[targs],))
                hint = f"For example, {as_list}.\n\n" if _hashable(as_list) and \
                    as_list in SUPPORTED_PARAM_TYPES else "\n\n"
                fail(f"Parameter {name} has unsupported type {p.annotation}. We do not support "
                     "Tuple inputs in schema. As a workaround, please try to use List instead. "
                     f"{hint}The valid types are: {SUPPORTED_PARAM_TYPES.keys()}.")
            fail(f"Parameter {name} has unsupported type {p.annotation}. "
                 f"The valid types are: {SUPPORTED_PARAM_TYPES.keys()}.")
        if type(mutates_args) is str:
            if mutates_args != "unknown":
                raise ValueError("mutates_args must either be a sequence of the names of the "
                                 "arguments that are mutated or the string 'unknown'. ")
            if schema_type.startswith("Tensor"):
                schema_type = f"Tensor(a{idx}!){schema_type[len('Tensor'):]}"
        elif name in mutates_args:
            if not schema_type.startswith("Tensor"):
                fail(f"Parameter {name} is in mutable_args but only Tensors or collections of "
                     "Tensors can be mutated")
            schema_type = f"Tensor(a{idx}!){schema_type[len('Tensor'):]}"
        seen.add(name)
        if p.default is p.empty:
            params.append(f"{schema_type} {name}")
            continue
        d = p.default
        if d is None or isinstance(d, (int, float, bool)):
            text = str(d)
        elif isinstance(d, (str, device)):
            text = f'"{d}"'
        elif isinstance(d, _dtype.dtype):
            text = str(d).split(".", 1)[1]
        else:
            fail(f"Parameter {name} has an unsupported default value type {type(d)}. "
                 "Please file an issue on GitHub so we can prioritize this.")
        params.append(f"{schema_type} {name}={text}")
    if mutates_args != "unknown":
        missing = set(mutates_args) - seen
        if missing:
            fail(f"{missing} in mutates_args were not found in the custom op's signature. "
                 "mutates_args should contain the names of all args that the custom op "
                 "mutates, or just the string 'unknown' if you don't know.")
    ret = _infer_return(resolve(sig.return_annotation), fail)
    body = f"({', '.join(params)}) -> {ret}"
    return body if op_name is None else op_name + body


def _hashable(t: Any) -> bool:
    try:
        hash(t)
    except TypeError:
        return False
    return True


def _infer_return(ann: Any, fail: Callable[[str], Any]) -> str:
    if ann is None:
        return "()"
    if ann is inspect.Parameter.empty:
        fail("No return type annotation was provided. Please add one.")
    if typing.get_origin(ann) is not tuple:
        if not _hashable(ann) or ann not in SUPPORTED_RETURN_TYPES:
            fail(f"Return has unsupported type {ann}. "
                 f"The valid types are: {SUPPORTED_RETURN_TYPES}.")
        return SUPPORTED_RETURN_TYPES[ann]
    items = typing.get_args(ann)
    for a in items:
        if not _hashable(a) or a not in SUPPORTED_RETURN_TYPES:
            fail(f"Return has unsupported type {ann}. "
                 f"The valid types are: {SUPPORTED_RETURN_TYPES}.")
    body = ", ".join(SUPPORTED_RETURN_TYPES[a] for a in items)
    return f"(({body}))" if len(items) == 1 else f"({body})"


# ---- binding a call ----

def _type_name(typ: str) -> str:
    """How torch names a schema type in its argument errors."""
    if typ.endswith("?"):
        return f"Optional[{_type_name(typ[:-1])}]"
    m = re.match(r"^(.*)\[\d*\]$", typ)
    if m:
        return f"List[{_type_name(m.group(1))}]"
    return {"SymInt": "int", "Scalar": "number", "ScalarType": "int", "float": "float",
            "Device": "Device"}.get(typ, typ)


class _Mismatch(Exception):
    pass


def _convert(v: Any, typ: str) -> Any:
    """``v`` as an argument of schema type ``typ`` (torch's conversions), or _Mismatch."""
    if typ.endswith("?"):
        return None if v is None else _convert(v, typ[:-1])
    m = re.match(r"^(.*)\[(\d*)\]$", typ)
    if m:
        elem, size = m.group(1), m.group(2)
        if isinstance(v, (list, tuple)):
            return [_convert(x, elem) for x in v]
        if size and elem in ("int", "SymInt") and _is_int(v):
            return [int(v)] * int(size)
        raise _Mismatch
    if typ == "Tensor":
        if v is None or isinstance(v, Tensor):
            return v
        raise _Mismatch
    if typ in ("int", "SymInt"):
        if _is_int(v):
            return int(v)
        if isinstance(v, Tensor) and v.dim() == 0 and not v.dtype.is_floating_point:
            return int(v.item())
        raise _Mismatch
    if typ == "float":
        if isinstance(v, (int, float)):
            return float(v)
        if isinstance(v, Tensor) and v.dim() == 0:
            return float(v.item())
        raise _Mismatch
    if typ == "bool":
        if isinstance(v, bool) or _is_int(v):
            return bool(v)
        raise _Mismatch
    if typ == "Scalar":
        if isinstance(v, (bool, int, float, complex)):
            return v
        if isinstance(v, Tensor) and v.dim() == 0:
            return v.item()
        raise _Mismatch
    if typ == "str":
        if isinstance(v, str):
            return v
        raise _Mismatch
    if typ == "ScalarType":
        if isinstance(v, _dtype.dtype):
            return v
        raise _Mismatch
    if typ == "Device":
        if isinstance(v, (str, device)):
            return device(v)
        raise _Mismatch
    return v


def _is_int(v: Any) -> bool:
    return isinstance(v, int) or (hasattr(v, "__index__") and not isinstance(v, (float, Tensor))
                                  and not isinstance(v, str))


def _found_type(v: Any) -> str:
    return "Tensor" if isinstance(v, Tensor) else type(v).__name__


def bind(schema: FunctionSchema, args: tuple, kwargs: dict) -> Tuple[list, dict]:
    """The call's arguments checked and converted against ``schema``: (positional values,
    keyword-only values), defaults filled. Errors are torch's RuntimeErrors."""
    qual = schema.name
    positional = [a for a in schema.arguments if not a.kwarg_only]
    if len(args) > len(positional):
        raise RuntimeError(f"{qual}() expected at most {len(positional)} argument(s) but "
                           f"received {len(args)} argument(s). Declaration: {schema}")
    names = {a.name for a in schema.arguments}
    for k in kwargs:
        if k not in names:
            raise RuntimeError(f"Unknown keyword argument '{k}' for operator '{qual}'. "
                               f"Schema: {schema}")
    pos_out, kw_out = [], {}
    for i, a in enumerate(schema.arguments):
        if i < len(args):
            if a.name in kwargs:
                raise RuntimeError(f"{qual}() got multiple values for argument '{a.name}'. "
                                   f"Declaration: {schema}")
            v, given = args[i], True
        elif a.name in kwargs:
            v, given = kwargs[a.name], True
        elif a.has_default:
            v, given = a.default, False
            if isinstance(v, list):
                v = list(v)
        else:
            raise RuntimeError(f"{qual}() is missing value for argument '{a.name}'. "
                               f"Declaration: {schema}")
        if given:
            try:
                v = _convert(v, a.type)
            except _Mismatch:
                raise RuntimeError(
                    f"{qual}() Expected a value of type '{_type_name(a.type)}' for argument "
                    f"'{a.name}' but instead found type '{_found_type(v)}'.\nPosition: {i}\n"
                    f"Value: {v!r}\nDeclaration: {schema}\n"
                    f"Cast error details: Unable to cast {v!r} to {a.type}") from None
        if a.kwarg_only:
            kw_out[a.name] = v
        else:
            pos_out.append(v)
    return pos_out, kw_out


def tensors_of(value: Any) -> List[Tensor]:
    """The tensors in an argument (a tensor, or a list of tensors and Nones)."""
    if isinstance(value, Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [v for v in value if isinstance(v, Tensor)]
    return []
