"""ndgrad.utils._pytree against torch.utils._pytree: leaves, specs (repr, equality), maps,
key paths, registration, serialization and the errors."""

from __future__ import annotations

from collections import OrderedDict, defaultdict, deque, namedtuple

import pytest
import torch
import torch.utils._pytree as tp

import ndgrad
import ndgrad.utils._pytree as np_

Point = namedtuple("Point", "x y")


def trees():
    return [
        1, None, (), [], {},
        (1, {"b": [2, 3], "a": None}, OrderedDict(x=4), Point(5, 6)),
        [defaultdict(list, {"k": 7}), deque([8, 9], maxlen=3), deque([1])],
        {"b": 1, "a": 2, 3: (4, [5, (6,)])},
    ]


@pytest.mark.parametrize("i", range(len(trees())))
def test_flatten_unflatten_repr_like_torch(i):
    tree = trees()[i]
    leaves, spec = np_.tree_flatten(tree)
    t_leaves, t_spec = tp.tree_flatten(trees()[i])
    assert leaves == t_leaves
    assert repr(spec) == repr(t_spec) and str(spec) == str(t_spec)
    assert (spec.num_leaves, spec.num_nodes, spec.num_children, spec.is_leaf()) == \
        (t_spec.num_leaves, t_spec.num_nodes, t_spec.num_children, t_spec.is_leaf())
    back = np_.tree_unflatten(leaves, spec)
    assert back == tree and type(back) is type(tree)
    assert np_.tree_leaves(tree) == tp.tree_leaves(tree)
    assert list(np_.tree_iter(tree)) == list(tp.tree_iter(tree))
    assert np_.tree_structure(tree) == spec
    if "Point" not in repr(spec):
        assert np_.treespec_dumps(spec) == tp.treespec_dumps(t_spec)
        assert np_.treespec_loads(np_.treespec_dumps(spec)) == spec


def test_size_and_return_types_are_nodes():
    s = np_.tree_structure(ndgrad.Size([2, 3]))
    assert repr(s) == repr(tp.tree_structure(torch.Size([2, 3])))
    r = ndgrad.ones(2, 2).max(0)
    leaves, spec = np_.tree_flatten(r)
    t_spec = tp.tree_structure(torch.ones(2, 2).max(0))
    assert repr(spec) == repr(t_spec) and len(leaves) == 2
    back = np_.tree_unflatten(leaves, spec)
    assert type(back) is type(r) and back.indices is r.indices


def test_equality_leafspec_and_dict_subclass():
    assert np_.tree_structure((1, 2)) == np_.tree_structure((3, 4))
    assert np_.tree_structure((1, 2)) != np_.tree_structure([3, 4])
    assert np_.tree_structure({"a": 1, "b": 2}) != np_.tree_structure({"b": 1, "a": 2})
    assert hash(np_.tree_structure((1, 2))) == hash(np_.tree_structure((5, 6)))
    assert np_.LeafSpec() == np_.tree_structure(1) == np_.treespec_leaf()
    assert repr(np_.LeafSpec()) == "*"

    class D(dict):
        pass
    assert np_.tree_leaves(D(a=1)) == tp.tree_leaves(D(a=1)) == [D(a=1)]


def test_maps_like_torch():
    for mod in (np_, tp):
        assert mod.tree_map(lambda a, b: a + b, (1, [2]), (10, [20])) == (11, [22])
        assert mod.tree_map(lambda a, b: (a, b), (1, 2), (1, [2, 3])) == ((1, 1), (2, [2, 3]))
        assert mod.tree_map(lambda a, b: a + b, {"a": 1, "b": 2}, {"b": 10, "a": 20}) == \
            {"a": 21, "b": 12}
        assert mod.tree_map_only(int, lambda x: -x, [1, 2.0, (3,)]) == [-1, 2.0, (-3,)]
        assert mod.tree_map_only((int, float), lambda x: -x, [1, 2.0, "s"]) == [-1, -2.0, "s"]
        assert mod.tree_map_only(int | float, lambda x: -x, [1, 2.0]) == [-1, -2.0]
        assert mod.tree_map_only(lambda x: x == 1, lambda x: -x, [1, 2]) == [-1, 2]
        assert mod.tree_all(lambda x: x > 0, [1, 2]) and mod.tree_any(lambda x: x > 1, [1, 2])
        assert not mod.tree_all(lambda x: x > 1, [1, 2])
        assert mod.tree_all_only(int, lambda x: x > 0, [1, -2.0])
        assert mod.tree_any_only(float, lambda x: x < 0, [1, -2.0])
        seen = []
        assert mod.tree_map_(seen.append, [1, (2,)]) == [1, (2,)] and seen == [1, 2]
        is_leaf = lambda x: isinstance(x, list) and len(x) == 1  # noqa: E731
        assert mod.tree_leaves([1, [2]], is_leaf=is_leaf) == [1, [2]]
        assert mod.tree_map(str, [[1], [2, 3]], is_leaf=is_leaf) == ["[1]", ["2", "3"]]


def test_tensor_leaves():
    a, b = ndgrad.ones(2), ndgrad.zeros(3)
    out = np_.tree_map(lambda t: t * 2, {"a": a, "b": [b]})
    assert out["a"].tolist() == [2.0, 2.0] and out["b"][0].tolist() == [0.0] * 3


def _err(fn):
    with pytest.raises(Exception) as info:
        fn()
    return type(info.value), str(info.value)


@pytest.mark.parametrize("case", [
    lambda m: m.tree_map(lambda a, b: a, (1, 2), (1, 2, 3)),
    lambda m: m.tree_map(lambda a, b: a, {"a": 1}, {"b": 1}),
    lambda m: m.tree_map(lambda a, b: a, (1, [2]), (1, [2, [3]])),
    lambda m: m.tree_map(lambda a, b: a + b, (1, [2]), (10, 20)),
    lambda m: m.tree_unflatten([1], m.tree_structure((1, 2))),
    lambda m: m.tree_unflatten([1], 5),
    lambda m: m.register_pytree_node(list, lambda x: x, lambda x: x),
    lambda m: m.treespec_dumps(m.tree_structure(Point(1, 2))),
    lambda m: m.treespec_loads("[2, {}]"),
])
def test_errors_like_torch(case):
    assert _err(lambda: case(np_)) == _err(lambda: case(tp))


def test_register_custom_node_and_paths():
    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b

    class Keyed(Pair):
        pass

    np_.register_pytree_node(Pair, lambda p: ([p.a, p.b], "ctx"),
                             lambda vals, ctx: Pair(*vals))
    try:
        leaves, spec = np_.tree_flatten([Pair(1, 2)])
        assert leaves == [1, 2]
        assert repr(spec) == "TreeSpec(list, None, [TreeSpec(Pair, ctx, [*,\n    *])])"
        p = np_.tree_map(lambda x: x + 1, Pair(1, 2))
        assert (p.a, p.b) == (2, 3)
        with pytest.raises(ValueError, match="Did not find a flatten_with_keys_fn for type"):
            np_.tree_flatten_with_path(Pair(1, 2))
        with pytest.raises(NotImplementedError, match="No registered serialization name"):
            np_.treespec_dumps(spec)
    finally:
        np_._deregister_pytree_node(Pair)
    np_.register_pytree_node(
        Keyed, lambda p: ([p.a, p.b], None), lambda vals, ctx: Keyed(*vals),
        serialized_type_name="test.Keyed",
        flatten_with_keys_fn=lambda p: ([(np_.GetAttrKey("a"), p.a),
                                         (np_.GetAttrKey("b"), p.b)], None))
    try:
        pairs = np_.tree_leaves_with_path({"k": Keyed(1, [2])})
        assert [(np_.keystr(k), v) for k, v in pairs] == [("['k'].a", 1), ("['k'].b[0]", 2)]
        spec = np_.tree_structure(Keyed(1, 2))
        assert np_.treespec_loads(np_.treespec_dumps(spec)) == spec
    finally:
        np_._deregister_pytree_node(Keyed)
    assert np_.tree_leaves(Keyed(1, 2))[0].a == 1


def test_key_paths_like_torch():
    tree = {"a": [1, 2], "b": Point(3, 4), "c": OrderedDict(z=deque([5]))}
    mine = np_.tree_flatten_with_path(tree)[0]
    theirs = tp.tree_flatten_with_path(tree)[0]
    assert [(np_.keystr(k), v) for k, v in mine] == [(tp.keystr(k), v) for k, v in theirs]
    assert [tuple(repr(e) for e in k) for k, _ in mine] == \
        [tuple(repr(e) for e in k) for k, _ in theirs]
    assert np_.key_get(tree, mine[2][0]) == 3
    assert np_.tree_map_with_path(lambda p, x: np_.keystr(p), {"a": 1}) == {"a": "['a']"}
    np_._register_namedtuple(Point, serialized_type_name="test.Point")
    tp._register_namedtuple(Point, serialized_type_name="test.Point")
    s = np_.tree_structure(Point(1, 2))
    assert np_.treespec_dumps(s) == tp.treespec_dumps(tp.tree_structure(Point(1, 2)))
    assert np_.treespec_loads(np_.treespec_dumps(s)) == s


def test_func_uses_the_public_module():
    import ndgrad.func._pytree as fp
    assert fp.tree_flatten is np_.tree_flatten and fp.TreeSpec is np_.TreeSpec
