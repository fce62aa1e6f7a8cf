"""Pytrees (``torch.utils._pytree``): nested containers whose leaves are anything else.

A registered container type (tuple, list, dict, OrderedDict, defaultdict, deque, named tuples,
``ndgrad.Size``, ``ndgrad.return_types`` and whatever ``register_pytree_node`` adds) is taken
apart into children and a *context* (dict keys, a named tuple's class, a deque's ``maxlen``);
everything else, ``None`` included, is a leaf. ``tree_flatten`` returns the leaves left to right
and a ``TreeSpec``; ``tree_unflatten`` puts leaves back into that structure. Dict keys keep
their insertion order. One implementation serves the function transforms (``ndgrad.func``).

Example:
    >>> from ndgrad.utils._pytree import tree_flatten, tree_map, tree_unflatten
    >>> leaves, spec = tree_flatten((1, {"b": [2, 3], "a": None}))
    >>> leaves
    [1, 2, 3, None]
    >>> spec
    TreeSpec(tuple, None, [*,
      TreeSpec(dict, ['b', 'a'], [TreeSpec(list, None, [*,
          *]),
        *])])
    >>> tree_unflatten([5, 6, 7, 8], spec)
    (5, {'b': [6, 7], 'a': 8})
    >>> tree_map(lambda x: x * 10, [1, (2, 3)])
    [10, (20, 30)]
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import threading
import types
from collections import OrderedDict, defaultdict, deque, namedtuple
from typing import Any, Callable, Iterable, Iterator, List, NamedTuple, Optional, Tuple

from .. import return_types as _return_types
from ..tensor import Size as _Size

__all__ = [
    "PyTree", "Context", "TreeSpec", "LeafSpec", "KeyEntry", "KeyPath", "SequenceKey",
    "MappingKey", "GetAttrKey", "register_pytree_node", "tree_flatten", "tree_unflatten",
    "tree_iter", "tree_leaves", "tree_structure", "tree_map", "tree_map_", "tree_map_only",
    "tree_map_only_", "tree_all", "tree_any", "tree_all_only", "tree_any_only", "tree_is_leaf",
    "tree_flatten_with_path", "tree_leaves_with_path", "tree_map_with_path", "keystr",
    "key_get", "treespec_dumps", "treespec_loads", "treespec_leaf", "treespec_tuple",
    "treespec_dict", "arg_tree_leaves", "is_namedtuple", "is_namedtuple_class",
    "is_namedtuple_instance", "SUPPORTED_NODES",
]

PyTree = Any
Context = Any
FlattenFunc = Callable[[PyTree], Tuple[List[Any], Context]]
UnflattenFunc = Callable[[Iterable[Any], Context], PyTree]


# ------------------------------------------------------------------------------ key paths
@dataclasses.dataclass(frozen=True)
class SequenceKey:
    """A position in a sequence: prints as ``[idx]``."""
    idx: int

    def __str__(self) -> str:
        return f"[{self.idx!r}]"

    def get(self, sequence: Any) -> Any:
        return sequence[self.idx]


@dataclasses.dataclass(frozen=True)
class MappingKey:
    """A key of a mapping: prints as ``[key]``."""
    key: Any

    def __str__(self) -> str:
        return f"[{self.key!r}]"

    def get(self, mapping: Any) -> Any:
        return mapping[self.key]


@dataclasses.dataclass(frozen=True)
class GetAttrKey:
    """An attribute: prints as ``.name``."""
    name: str

    def __str__(self) -> str:
        return f".{self.name}"

    def get(self, obj: Any) -> Any:
        return getattr(obj, self.name)


KeyEntry = Any
KeyPath = Tuple[KeyEntry, ...]


def keystr(kp: KeyPath) -> str:
    """A key path as text.

    >>> keystr((SequenceKey(0), MappingKey("a"), GetAttrKey("x")))
    "[0]['a'].x"
    """
    return "".join(str(k) for k in kp)


def key_get(obj: Any, kp: KeyPath) -> Any:
    """The value at key path ``kp`` inside ``obj``.

    >>> key_get({"a": [1, 2]}, (MappingKey("a"), SequenceKey(1)))
    2
    """
    for k in kp:
        obj = k.get(obj)
    return obj


# ------------------------------------------------------------------------------ registry
class NodeDef(NamedTuple):
    type: Any
    flatten_fn: FlattenFunc
    unflatten_fn: UnflattenFunc
    flatten_with_keys_fn: Optional[Callable[[PyTree], Tuple[List[Tuple[Any, Any]], Context]]]


@dataclasses.dataclass(frozen=True)
class _SerializeNodeDef:
    typ: Any
    serialized_type_name: str
    to_dumpable_context: Optional[Callable[[Context], Any]]
    from_dumpable_context: Optional[Callable[[Any], Context]]


SUPPORTED_NODES: dict = {}
SUPPORTED_SERIALIZED_TYPES: dict = {}
SERIALIZED_TYPE_TO_PYTHON_TYPE: dict = {}
_LOCK = threading.Lock()


def _register(cls: Any, flatten_fn: FlattenFunc, unflatten_fn: UnflattenFunc,
              serialized_type_name: Optional[str] = None,
              to_dumpable_context: Optional[Callable] = None,
              from_dumpable_context: Optional[Callable] = None,
              flatten_with_keys_fn: Optional[Callable] = None) -> None:
    with _LOCK:
        if cls in SUPPORTED_NODES:
            raise ValueError(f"{cls} is already registered as pytree node.")
        SUPPORTED_NODES[cls] = NodeDef(cls, flatten_fn, unflatten_fn, flatten_with_keys_fn)
        if (to_dumpable_context is None) != (from_dumpable_context is None):
            raise ValueError(f"Both to_dumpable_context and from_dumpable_context for {cls} "
                             "must be None or registered.")
        name = serialized_type_name or "NO_SERIALIZED_TYPE_NAME_FOUND"
        SUPPORTED_SERIALIZED_TYPES[cls] = _SerializeNodeDef(
            cls, name, to_dumpable_context, from_dumpable_context)
        SERIALIZED_TYPE_TO_PYTHON_TYPE[name] = cls


def register_pytree_node(cls: type, flatten_fn: FlattenFunc, unflatten_fn: UnflattenFunc, *,
                         serialized_type_name: Optional[str] = None,
                         to_dumpable_context: Optional[Callable[[Context], Any]] = None,
                         from_dumpable_context: Optional[Callable[[Any], Context]] = None,
                         flatten_with_keys_fn: Optional[Callable] = None) -> None:
    """Make ``cls`` a container: ``flatten_fn(obj) -> (children, context)`` and
    ``unflatten_fn(children, context) -> obj``; ``flatten_with_keys_fn(obj) ->
    ([(key, child), ...], context)`` gives key paths.

    >>> class Pair:
    ...     def __init__(self, a, b):
    ...         self.a, self.b = a, b
    >>> register_pytree_node(Pair, lambda p: ([p.a, p.b], None),
    ...                      lambda children, ctx: Pair(*children))
    >>> tree_leaves([Pair(1, 2), 3])
    [1, 2, 3]
    """
    _register(cls, flatten_fn, unflatten_fn, serialized_type_name, to_dumpable_context,
              from_dumpable_context, flatten_with_keys_fn)


def _deregister_pytree_node(cls: type) -> None:
    with _LOCK:
        SUPPORTED_NODES.pop(cls, None)
        ser = SUPPORTED_SERIALIZED_TYPES.pop(cls, None)
        if ser is not None:
            SERIALIZED_TYPE_TO_PYTHON_TYPE.pop(ser.serialized_type_name, None)


_NAMEDTUPLE_NAMES: dict = {}       # named tuple class -> serialized name
_NAMEDTUPLE_CLASSES: dict = {}


def _register_namedtuple(cls: type, *, serialized_type_name: str) -> None:
    """Give a named tuple class a name for ``treespec_dumps``."""
    _NAMEDTUPLE_NAMES[cls] = serialized_type_name
    _NAMEDTUPLE_CLASSES[serialized_type_name] = cls


def is_namedtuple_class(cls: Any) -> bool:
    """Whether ``cls`` is a named tuple class."""
    fields = getattr(cls, "_fields", None)
    return isinstance(cls, type) and issubclass(cls, tuple) and \
        isinstance(fields, tuple) and all(isinstance(f, str) for f in fields)


def is_namedtuple_instance(obj: Any) -> bool:
    """Whether ``obj`` is a named tuple."""
    return is_namedtuple_class(type(obj))


def is_namedtuple(obj: Any) -> bool:
    """Whether ``obj`` (a class or an instance) is a named tuple."""
    return is_namedtuple_class(obj if isinstance(obj, type) else type(obj))


def _seq_keys(children: list) -> list:
    return [(SequenceKey(i), c) for i, c in enumerate(children)]


def _dict_flatten(d: dict) -> Tuple[list, list]:
    return list(d.values()), list(d.keys())


def _dict_keys(d: dict) -> Tuple[list, list]:
    return [(MappingKey(k), v) for k, v in d.items()], list(d.keys())


def _defaultdict_flatten(d: defaultdict) -> Tuple[list, list]:
    return list(d.values()), [d.default_factory, list(d.keys())]


def _defaultdict_keys(d: defaultdict) -> Tuple[list, list]:
    return [(MappingKey(k), v) for k, v in d.items()], [d.default_factory, list(d.keys())]


def _defaultdict_dump(ctx: list) -> dict:
    factory = ctx[0]
    return {"default_factory_module": factory.__module__,
            "default_factory_name": factory.__qualname__, "dict_context": ctx[1]}


def _defaultdict_load(obj: dict) -> list:
    mod = importlib.import_module(obj["default_factory_module"])
    return [getattr(mod, obj["default_factory_name"]), obj["dict_context"]]


def _namedtuple_dump(cls: type) -> str:
    if cls not in _NAMEDTUPLE_NAMES:
        raise NotImplementedError(
            f"Can't serialize TreeSpec of namedtuple class {cls} because we didn't register a "
            "serializated_type_name. Please register using `_register_namedtuple`.")
    return _NAMEDTUPLE_NAMES[cls]


def _namedtuple_load(name: str) -> type:
    if name not in _NAMEDTUPLE_CLASSES:
        raise NotImplementedError(
            f"Can't deserialize TreeSpec of namedtuple class {name} because we couldn't find "
            "a serializated name.")
    return _NAMEDTUPLE_CLASSES[name]


_register(tuple, lambda t: (list(t), None), lambda c, _: tuple(c), "builtins.tuple",
          flatten_with_keys_fn=lambda t: (_seq_keys(list(t)), None))
_register(list, lambda t: (t, None), lambda c, _: list(c), "builtins.list",
          flatten_with_keys_fn=lambda t: (_seq_keys(t), None))
_register(dict, _dict_flatten, lambda c, k: dict(zip(k, c)), "builtins.dict",
          flatten_with_keys_fn=_dict_keys)
_register(namedtuple, lambda t: (list(t), type(t)), lambda c, cls: cls(*c),
          "collections.namedtuple", _namedtuple_dump, _namedtuple_load,
          lambda t: ([(GetAttrKey(f), v) for f, v in zip(t._fields, t)], type(t)))
_register(OrderedDict, _dict_flatten, lambda c, k: OrderedDict(zip(k, c)),
          "collections.OrderedDict", flatten_with_keys_fn=_dict_keys)
_register(defaultdict, _defaultdict_flatten,
          lambda c, ctx: defaultdict(ctx[0], dict(zip(ctx[1], c))), "collections.defaultdict",
          _defaultdict_dump, _defaultdict_load, _defaultdict_keys)
_register(deque, lambda d: (list(d), d.maxlen), lambda c, m: deque(c, maxlen=m),
          "collections.deque", flatten_with_keys_fn=lambda d: (_seq_keys(list(d)), d.maxlen))
_register(_Size, lambda s: (list(s), None), lambda c, _: _Size(c), "torch.Size",
          flatten_with_keys_fn=lambda s: (_seq_keys(list(s)), None))
def _structseq_unflatten(cls: type) -> UnflattenFunc:
    return lambda children, _: cls(*children)


# the ops' result tuples are nodes of their own type (torch's structseqs), not named tuples
for _name in dir(_return_types):
    _cls = getattr(_return_types, _name)
    if is_namedtuple_class(_cls) and _cls.__module__ == _return_types.__name__:
        _register(_cls, lambda t: (list(t), None), _structseq_unflatten(_cls),
                  f"torch.return_types.{_name}",
                  flatten_with_keys_fn=lambda t: (_seq_keys(list(t)), None))

STANDARD_DICT_TYPES = frozenset({dict, OrderedDict, defaultdict})


def _node_type(tree: Any) -> Any:
    t = type(tree)
    if t not in SUPPORTED_NODES and is_namedtuple_class(t):
        return namedtuple
    return t


def _is_leaf(tree: Any, is_leaf: Optional[Callable[[Any], bool]] = None) -> bool:
    return (is_leaf is not None and is_leaf(tree)) or _node_type(tree) not in SUPPORTED_NODES


def tree_is_leaf(tree: PyTree, is_leaf: Optional[Callable[[PyTree], bool]] = None) -> bool:
    """Whether ``tree`` is a leaf (not a registered container, or ``is_leaf`` says so).

    >>> tree_is_leaf(None), tree_is_leaf([1])
    (True, False)
    """
    return _is_leaf(tree, is_leaf)


# ------------------------------------------------------------------------------ TreeSpec
class TreeSpec:
    """The structure of a pytree: a node type, its context and one spec per child; a leaf
    has type None. Specs compare equal when their structures are the same.

    >>> tree_structure((1, [2, 3])) == tree_structure((4, [5, 6]))
    True
    >>> tree_structure((1, [2, 3])).num_leaves
    3
    """

    __slots__ = ("type", "context", "children_specs", "num_nodes", "num_leaves",
                 "num_children")

    def __init__(self, type: Any, context: Context, children_specs: List["TreeSpec"]) -> None:
        self.type = type
        self.context = context
        kids = self.children_specs = list(children_specs)
        self.num_children = len(kids)
        if type is None:
            self.num_nodes, self.num_leaves = 1, 1
        else:
            nodes, leaves = 1, 0
            for c in kids:
                nodes += c.num_nodes
                leaves += c.num_leaves
            self.num_nodes, self.num_leaves = nodes, leaves

    def is_leaf(self) -> bool:
        return self.type is None

    def child(self, index: int) -> "TreeSpec":
        return self.children_specs[index]

    def children(self) -> List["TreeSpec"]:
        return list(self.children_specs)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TreeSpec):
            return NotImplemented
        return self.type is other.type and self.context == other.context and \
            self.children_specs == other.children_specs

    def __hash__(self) -> int:
        return hash((id(self.type), self.num_nodes, self.num_leaves))

    def _type_name(self) -> str:
        return "namedtuple" if self.type is namedtuple else self.type.__name__

    def __repr__(self, indent: int = 0) -> str:
        if self.type is None:
            return "*"
        kids = ""
        if self.children_specs:
            indent += 2
            kids = self.children_specs[0].__repr__(indent)
            if self.num_children > 1:
                kids += ","
            kids += ",".join("\n" + " " * indent + c.__repr__(indent)
                             for c in self.children_specs[1:])
        return f"TreeSpec({self._type_name()}, {self.context}, [{kids}])"

    def unflatten(self, leaves: Iterable[Any]) -> PyTree:
        """The tree of this structure holding ``leaves``."""
        if not isinstance(leaves, (list, tuple)):
            leaves = list(leaves)
        if len(leaves) != self.num_leaves:
            raise ValueError(f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} "
                             f"but the spec refers to a pytree that holds {self.num_leaves} "
                             f"items ({self}).")
        it = iter(leaves)

        def build(spec: TreeSpec) -> Any:
            t = spec.type
            if t is None:
                return next(it)
            if t is tuple:
                return tuple([build(c) for c in spec.children_specs])
            if t is list:
                return [build(c) for c in spec.children_specs]
            kids = [build(c) for c in spec.children_specs]
            if t is dict:
                return dict(zip(spec.context, kids))
            return SUPPORTED_NODES[t].unflatten_fn(kids, spec.context)

        return build(self)

    def flatten_up_to(self, tree: PyTree) -> List[PyTree]:
        """The subtrees of ``tree`` at this spec's leaves (``tree`` must have this structure
        down to them)."""
        out: list = []

        def go(spec: TreeSpec, node: Any) -> None:
            if spec.type is None:
                out.append(node)
                return
            ntype = _node_type(node)
            if ntype is not spec.type and not (ntype in STANDARD_DICT_TYPES and
                                               spec.type in STANDARD_DICT_TYPES):
                raise ValueError(f"Node type mismatch; expected {spec.type}, but got "
                                 f"{type(node)}.")
            if ntype not in SUPPORTED_NODES:
                raise ValueError(f"Node type mismatch; expected {spec.type}, but got "
                                 f"{type(node)}.")
            kids, ctx = SUPPORTED_NODES[ntype].flatten_fn(node)
            if len(kids) != spec.num_children:
                raise ValueError(f"Node arity mismatch; expected {spec.num_children}, but got "
                                 f"{len(kids)}.")
            if spec.type in STANDARD_DICT_TYPES:
                keys = spec.context[1] if spec.type is defaultdict else spec.context
                have = ctx[1] if ntype is defaultdict else ctx
                if set(keys) != set(have):
                    missing = set(keys) - set(have)
                    extra = set(have) - set(keys)
                    msg = "Node keys mismatch"
                    if missing:
                        msg += f"; missing key(s): {missing}"
                    if extra:
                        msg += f"; extra key(s): {extra}"
                    raise ValueError(msg + ".")
                kids = [node[k] for k in keys]
            elif spec.type is namedtuple and ctx is not spec.context:
                raise ValueError(f"Node context mismatch for custom node type; expected "
                                 f"{spec.context}, but got {ctx}.")
            for c, k in zip(spec.children_specs, kids):
                go(c, k)

        go(self, tree)
        return out


class LeafSpec(TreeSpec):
    """The spec of a leaf (``*``).

    >>> LeafSpec() == tree_structure(1)
    True
    """

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(None, None, [])


_LEAF_SPEC = LeafSpec()


def treespec_leaf() -> TreeSpec:
    """The spec of a leaf.

    >>> treespec_leaf()
    *
    """
    return _LEAF_SPEC


def treespec_tuple(iterable: Iterable[TreeSpec] = ()) -> TreeSpec:
    """A tuple of the given specs.

    >>> treespec_tuple([treespec_leaf(), treespec_leaf()]).num_leaves
    2
    """
    return TreeSpec(tuple, None, list(iterable))


def treespec_dict(mapping: Any = (), **kwargs: TreeSpec) -> TreeSpec:
    """A dict of the given specs.

    >>> treespec_dict(a=treespec_leaf()).context
    ['a']
    """
    d = dict(mapping, **kwargs)
    return TreeSpec(dict, list(d.keys()), list(d.values()))


# ------------------------------------------------------------------------------ flatten
def _flatten(tree: Any, leaves: list, is_leaf: Optional[Callable[[Any], bool]]) -> TreeSpec:
    if is_leaf is not None and is_leaf(tree):
        leaves.append(tree)
        return _LEAF_SPEC
    t = type(tree)
    if t is tuple or t is list:       # the common containers first (vmap, grad call this)
        return TreeSpec(t, None, [_flatten(c, leaves, is_leaf) for c in tree])
    if t is dict:
        return TreeSpec(dict, list(tree), [_flatten(c, leaves, is_leaf) for c in tree.values()])
    if t not in SUPPORTED_NODES and not issubclass(t, tuple):
        leaves.append(tree)
        return _LEAF_SPEC
    ntype = _node_type(tree)
    node = SUPPORTED_NODES.get(ntype)
    if node is None:
        leaves.append(tree)
        return _LEAF_SPEC
    kids, ctx = node.flatten_fn(tree)
    return TreeSpec(ntype, ctx, [_flatten(k, leaves, is_leaf) for k in kids])


def tree_flatten(tree: PyTree, is_leaf: Optional[Callable[[PyTree], bool]] = None
                 ) -> Tuple[List[Any], TreeSpec]:
    """The leaves of ``tree`` left to right, and its structure.

    >>> tree_flatten({"x": 1, "y": (2, 3)})[0]
    [1, 2, 3]
    """
    leaves: list = []
    spec = _flatten(tree, leaves, is_leaf)
    return leaves, spec


def tree_unflatten(leaves: Iterable[Any], treespec: TreeSpec) -> PyTree:
    """The tree of structure ``treespec`` holding ``leaves`` (the inverse of tree_flatten).

    >>> tree_unflatten([1, 2], tree_structure([0, 0]))
    [1, 2]
    """
    if not isinstance(treespec, TreeSpec):
        raise TypeError(f"Expected `treespec` to be an instance of PyTreeSpec but got item of "
                        f"type {type(treespec)}.")
    return treespec.unflatten(leaves)


def tree_iter(tree: PyTree, is_leaf: Optional[Callable[[PyTree], bool]] = None
              ) -> Iterator[Any]:
    """The leaves of ``tree``, one at a time.

    >>> list(tree_iter([1, (2, 3)]))
    [1, 2, 3]
    """
    stack = [tree]
    while stack:
        node = stack.pop()
        if _is_leaf(node, is_leaf):
            yield node
            continue
        kids, _ = SUPPORTED_NODES[_node_type(node)].flatten_fn(node)
        stack.extend(reversed(list(kids)))


def tree_leaves(tree: PyTree, is_leaf: Optional[Callable[[PyTree], bool]] = None) -> List[Any]:
    """The leaves of ``tree`` in order.

    >>> tree_leaves([1, {"a": 2}])
    [1, 2]
    """
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree: PyTree, is_leaf: Optional[Callable[[PyTree], bool]] = None
                   ) -> TreeSpec:
    """The structure of ``tree``.

    >>> tree_structure((1, 2))
    TreeSpec(tuple, None, [*,
      *])
    """
    return tree_flatten(tree, is_leaf)[1]


def arg_tree_leaves(*args: PyTree, **kwargs: PyTree) -> List[Any]:
    """The leaves of positional and keyword arguments together.

    >>> arg_tree_leaves(1, [2], k=3)
    [1, 2, 3]
    """
    out: list = []
    for a in args:
        _flatten(a, out, None)
    for v in kwargs.values():
        _flatten(v, out, None)
    return out


# ------------------------------------------------------------------------------ mapping
def tree_map(func: Callable[..., Any], tree: PyTree, *rests: PyTree,
             is_leaf: Optional[Callable[[PyTree], bool]] = None) -> PyTree:
    """``tree`` with ``func`` applied to every leaf; with ``rests``, ``func`` takes the
    corresponding subtrees of each of them as further arguments.

    >>> tree_map(lambda a, b: a + b, (1, [2]), (10, [20]))
    (11, [22])
    """
    leaves, spec = tree_flatten(tree, is_leaf)
    flat = [leaves] + [spec.flatten_up_to(r) for r in rests]
    return spec.unflatten([func(*xs) for xs in zip(*flat)])


def tree_map_(func: Callable[..., Any], tree: PyTree, *rests: PyTree,
              is_leaf: Optional[Callable[[PyTree], bool]] = None) -> PyTree:
    """Call ``func`` on every leaf for its side effects; returns ``tree``.

    >>> seen = []
    >>> tree_map_(seen.append, [1, (2,)])
    [1, (2,)]
    >>> seen
    [1, 2]
    """
    leaves, spec = tree_flatten(tree, is_leaf)
    flat = [leaves] + [spec.flatten_up_to(r) for r in rests]
    for xs in zip(*flat):
        func(*xs)
    return tree


def _only(type_or_pred: Any) -> Callable[[Any], bool]:
    if isinstance(type_or_pred, (type, tuple, types.UnionType)):
        return lambda x: isinstance(x, type_or_pred)
    if callable(type_or_pred):
        return type_or_pred
    raise TypeError("Argument must be a type, a tuple of types, or a callable.")


def map_only(type_or_types_or_pred: Any) -> Callable[[Callable], Callable]:
    """Decorator: the function applies to leaves that match, others pass through."""
    pred = _only(type_or_types_or_pred)

    def wrap(func: Callable) -> Callable:
        def inner(x: Any) -> Any:
            return func(x) if pred(x) else x
        return inner
    return wrap


def tree_map_only(type_or_types_or_pred: Any, /, func: Callable[[Any], Any], tree: PyTree,
                  is_leaf: Optional[Callable[[PyTree], bool]] = None) -> PyTree:
    """``tree`` with ``func`` applied to the leaves of the given types (or for which the
    predicate holds); other leaves unchanged.

    >>> tree_map_only(int, lambda x: -x, [1, 2.0, (3,)])
    [-1, 2.0, (-3,)]
    """
    return tree_map(map_only(type_or_types_or_pred)(func), tree, is_leaf=is_leaf)


def tree_map_only_(type_or_types_or_pred: Any, /, func: Callable[[Any], Any], tree: PyTree,
                   is_leaf: Optional[Callable[[PyTree], bool]] = None) -> PyTree:
    """``tree_map_`` on the leaves of the given types only.

    >>> tree_map_only_(str, print, [1, "a"])
    a
    [1, 'a']
    """
    return tree_map_(map_only(type_or_types_or_pred)(func), tree, is_leaf=is_leaf)


def tree_all(pred: Callable[[Any], bool], tree: PyTree,
             is_leaf: Optional[Callable[[PyTree], bool]] = None) -> bool:
    """Whether ``pred`` holds for every leaf.

    >>> tree_all(lambda x: x > 0, [1, (2,)])
    True
    """
    return all(map(pred, tree_iter(tree, is_leaf)))


def tree_any(pred: Callable[[Any], bool], tree: PyTree,
             is_leaf: Optional[Callable[[PyTree], bool]] = None) -> bool:
    """Whether ``pred`` holds for some leaf.

    >>> tree_any(lambda x: x > 1, [1, (2,)])
    True
    """
    return any(map(pred, tree_iter(tree, is_leaf)))


def tree_all_only(type_or_types: Any, /, pred: Callable[[Any], bool], tree: PyTree,
                  is_leaf: Optional[Callable[[PyTree], bool]] = None) -> bool:
    """Whether ``pred`` holds for every leaf of the given types.

    >>> tree_all_only(int, lambda x: x > 0, [1, -2.0])
    True
    """
    return all(pred(x) for x in tree_iter(tree, is_leaf) if isinstance(x, type_or_types))


def tree_any_only(type_or_types: Any, /, pred: Callable[[Any], bool], tree: PyTree,
                  is_leaf: Optional[Callable[[PyTree], bool]] = None) -> bool:
    """Whether ``pred`` holds for some leaf of the given types.

    >>> tree_any_only(float, lambda x: x < 0, [1, -2.0])
    True
    """
    return any(pred(x) for x in tree_iter(tree, is_leaf) if isinstance(x, type_or_types))


# ------------------------------------------------------------------------------ key paths
def _with_keys(node: Any, ntype: Any) -> Tuple[list, Any]:
    fn = SUPPORTED_NODES[ntype].flatten_with_keys_fn
    if fn is None:
        raise ValueError(f"Did not find a flatten_with_keys_fn for type: {ntype}. Please pass "
                         "a flatten_with_keys_fn argument to register_pytree_node.")
    return fn(node)


def tree_flatten_with_path(tree: PyTree, is_leaf: Optional[Callable[[PyTree], bool]] = None
                           ) -> Tuple[List[Tuple[KeyPath, Any]], TreeSpec]:
    """``(key path, leaf)`` pairs and the structure.

    >>> pairs, _ = tree_flatten_with_path({"a": [1, 2]})
    >>> [(keystr(p), v) for p, v in pairs]
    [("['a'][0]", 1), ("['a'][1]", 2)]
    """
    out: list = []

    def go(node: Any, path: tuple) -> None:
        if _is_leaf(node, is_leaf):
            out.append((path, node))
            return
        pairs, _ = _with_keys(node, _node_type(node))
        for k, v in pairs:
            go(v, path + (k,))

    go(tree, ())
    return out, tree_structure(tree, is_leaf)


def tree_leaves_with_path(tree: PyTree, is_leaf: Optional[Callable[[PyTree], bool]] = None
                          ) -> List[Tuple[KeyPath, Any]]:
    """``(key path, leaf)`` pairs.

    >>> tree_leaves_with_path([7])
    [((SequenceKey(idx=0),), 7)]
    """
    return tree_flatten_with_path(tree, is_leaf)[0]


def tree_map_with_path(func: Callable[..., Any], tree: PyTree, *rests: PyTree,
                       is_leaf: Optional[Callable[[PyTree], bool]] = None) -> PyTree:
    """``tree_map`` whose ``func`` also receives each leaf's key path first.

    >>> tree_map_with_path(lambda p, x: keystr(p), {"a": 1})
    {'a': "['a']"}
    """
    pairs, spec = tree_flatten_with_path(tree, is_leaf)
    flat = [spec.flatten_up_to(r) for r in rests]
    return spec.unflatten([func(p, x, *xs) for (p, x), *xs in zip(pairs, *flat)])


def _broadcast_to_and_flatten(tree: PyTree, treespec: TreeSpec,
                              is_leaf: Optional[Callable[[PyTree], bool]] = None
                              ) -> Optional[List[Any]]:
    """One value per leaf of ``treespec``: a leaf of ``tree`` (a *prefix* of the structure)
    covers its whole subtree. None when ``tree`` is not a prefix of ``treespec``."""
    out: list = []

    def go(node: Any, spec: TreeSpec) -> bool:
        if _is_leaf(node, is_leaf):
            out.extend([node] * spec.num_leaves)
            return True
        ntype = _node_type(node)
        if ntype is not spec.type:
            return False
        kids, ctx = SUPPORTED_NODES[ntype].flatten_fn(node)
        if len(kids) != spec.num_children or ctx != spec.context:
            return False
        return all(go(k, c) for k, c in zip(kids, spec.children_specs))

    return out if go(tree, treespec) else None


# ------------------------------------------------------------------------------ serializing
_PROTOCOL = 1


def _spec_to_json(spec: TreeSpec) -> dict:
    if spec.type is None:
        return {"type": None, "context": None, "children_spec": []}
    ser = SUPPORTED_SERIALIZED_TYPES.get(spec.type)
    if ser is None or ser.serialized_type_name == "NO_SERIALIZED_TYPE_NAME_FOUND":
        raise NotImplementedError(
            f"No registered serialization name for {spec.type} found. Please update your "
            "_register_pytree_node call with a `serialized_type_name` kwarg.")
    if ser.to_dumpable_context is None:
        try:
            ctx = json.dumps(spec.context)
        except TypeError as e:
            raise TypeError("Unable to serialize context. Please make the context json dump-"
                            "able, or register a custom serializer using "
                            "_register_pytree_node.") from e
    else:
        ctx = ser.to_dumpable_context(spec.context)
    return {"type": ser.serialized_type_name, "context": ctx,
            "children_spec": [_spec_to_json(c) for c in spec.children_specs]}


def _json_to_spec(obj: dict) -> TreeSpec:
    if obj["type"] is None:
        return _LEAF_SPEC
    if obj["type"] not in SERIALIZED_TYPE_TO_PYTHON_TYPE:
        raise NotImplementedError(f"Unable to deserialize TreeSpec of type {obj['type']}.")
    typ = SERIALIZED_TYPE_TO_PYTHON_TYPE[obj["type"]]
    ser = SUPPORTED_SERIALIZED_TYPES[typ]
    ctx = json.loads(obj["context"]) if ser.from_dumpable_context is None \
        else ser.from_dumpable_context(obj["context"])
    return TreeSpec(typ, ctx, [_json_to_spec(c) for c in obj["children_spec"]])


def treespec_dumps(treespec: TreeSpec, protocol: Optional[int] = None) -> str:
    """The spec as JSON text (``treespec_loads`` reads it back).

    >>> treespec_loads(treespec_dumps(tree_structure([1, {"a": 2}])))
    TreeSpec(list, None, [*,
      TreeSpec(dict, ['a'], [*])])
    """
    if not isinstance(treespec, TreeSpec):
        raise TypeError(f"treespec_dumps(treespec, protocol): Expected `treespec` to be "
                        f"instance of TreeSpec but got item of type {type(treespec)}.")
    protocol = _PROTOCOL if protocol is None else protocol
    if protocol != _PROTOCOL:
        raise ValueError(f"Unknown protocol {protocol}. Available protocols: [{_PROTOCOL}]")
    return json.dumps((protocol, _spec_to_json(treespec)))


def treespec_loads(serialized: str) -> TreeSpec:
    """The spec ``treespec_dumps`` wrote."""
    protocol, obj = json.loads(serialized)
    if protocol != _PROTOCOL:
        raise ValueError(f"Unknown protocol {protocol}. Available protocols: [{_PROTOCOL}]")
    return _json_to_spec(obj)
