"""Rooted trees (forests) of nodes: the structure of tree-structured sparsity.

Jenatton, Mairal, Obozinski and Bach (ICML 2010) group every node with all its
descendants; :class:`Tree` is the validated parent array in depth-first order
that the tree proximal operator (:func:`neurospca.prox_tree`), the
dictionary-learning estimator and the simulations share. Like
:mod:`neurospca.operators`, it describes a structure and imports no estimator.
"""

import numpy as np

from ._utils.validation import check_int

__all__ = ["Tree", "check_tree", "balanced_tree"]


class Tree:
    """A validated rooted forest in depth-first (pre-)order.

    Build it with :func:`check_tree` from a parent array. In pre-order every
    subtree is a contiguous range, so group ``g_j`` is the slice
    ``order[pos[j]:end[pos[j]]]``, and walking the positions backwards visits
    every node after all its descendants (leaves to root).

    Parameters
    ----------
    parent, order, end, depth : ndarray of int64, shape (n_nodes,)
        As the attributes below (:func:`check_tree` computes them).

    Attributes
    ----------
    parent : ndarray of int64, shape (n_nodes,)
        ``parent[j]`` is the parent of node ``j``, ``-1`` for a root.
    order : ndarray of int64, shape (n_nodes,)
        Nodes in depth-first pre-order.
    end : ndarray of int64, shape (n_nodes,)
        ``end[i]``: one past the last pre-order position of the subtree rooted
        at ``order[i]``.
    depth : ndarray of int64, shape (n_nodes,)
        Depth of each node (roots have depth 0).
    levels : list of ndarray of int64
        The nodes at each depth.
    """

    def __init__(self, parent, order, end, depth):
        self.parent = parent
        self.order = order
        self.end = end
        self.depth = depth
        # nodes by depth: groups of one level are disjoint
        by_depth = np.argsort(depth, kind="stable")
        cuts = np.searchsorted(depth[by_depth], np.arange(int(depth.max(initial=0)) + 2))
        self.levels = [by_depth[cuts[d] : cuts[d + 1]] for d in range(cuts.size - 1)]

    @property
    def n_nodes(self):
        """Number of nodes (int)."""
        return self.parent.size

    def groups(self):
        """Group ``g_j`` (node and descendants) of every node ``j``.

        Returns
        -------
        list of ndarray of int64
            Sorted node indices of ``g_j``, one array per node ``j``.
        """
        out = [None] * self.n_nodes
        for i, node in enumerate(self.order):
            out[node] = np.sort(self.order[i : self.end[i]])
        return out

    def __repr__(self):
        return (
            f"Tree(n_nodes={self.n_nodes}, n_roots={int((self.parent < 0).sum())}, "
            f"max_depth={int(self.depth.max(initial=0))})"
        )


def check_tree(tree, n_nodes=None, name="tree"):
    """Validate a parent array and return a :class:`Tree`.

    Parameters
    ----------
    tree : array-like of int or Tree
        ``tree[j]`` is the parent of node ``j``; roots have parent ``-1``.
        A forest (several roots) is allowed.
    n_nodes : int, optional
        Expected number of nodes.
    name : str
        Name used in error messages.

    Returns
    -------
    Tree

    Raises
    ------
    TypeError
        If the parents are not integers.
    ValueError
        Empty tree, parents out of range, a node that is its own parent, a
        cycle (a node that does not reach a root), or a size mismatch.
    """
    if isinstance(tree, Tree):
        parent = tree.parent
        if n_nodes is not None and parent.size != n_nodes:
            raise ValueError(f"{name} has {parent.size} nodes, expected {n_nodes}.")
        return tree
    arr = np.asarray(tree)
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.integer) or arr.size == 0):
        if (
            np.issubdtype(arr.dtype, np.floating)
            and np.all(np.isfinite(arr))
            and np.all(arr == np.round(arr))
        ):
            arr = arr.astype(np.int64)
        else:
            raise TypeError(
                f"{name} must be a parent array of ints (parent of each node, -1 for "
                f"a root), got dtype {arr.dtype}."
            )
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D parent array, got shape {arr.shape}.")
    parent = arr.astype(np.int64)
    p = parent.size
    if n_nodes is not None and p != n_nodes:
        raise ValueError(f"{name} has {p} nodes, expected {n_nodes}.")
    bad = np.flatnonzero((parent < -1) | (parent >= p))
    if bad.size:
        raise ValueError(
            f"{name}: parent of node {bad[0]} is {parent[bad[0]]}, outside [-1, {p - 1}]."
        )
    selfp = np.flatnonzero(parent == np.arange(p))
    if selfp.size:
        raise ValueError(f"{name}: node {selfp[0]} is its own parent; roots use -1.")
    roots = np.flatnonzero(parent < 0)
    if roots.size == 0:
        raise ValueError(f"{name} has no root (no parent equal to -1): it contains a cycle.")
    # children lists in CSR form, children in increasing index order
    child_sort = np.argsort(parent, kind="stable")
    n_roots = roots.size
    kids = child_sort[n_roots:]
    kid_ptr = np.searchsorted(parent[kids], np.arange(p + 1))
    order = np.empty(p, dtype=np.int64)
    depth = np.zeros(p, dtype=np.int64)
    n = 0
    stack = list(roots[::-1])
    while stack:
        node = stack.pop()
        order[n] = node
        n += 1
        ch = kids[kid_ptr[node] : kid_ptr[node + 1]]
        depth[ch] = depth[node] + 1
        stack.extend(ch[::-1].tolist())
    if n != p:
        seen = np.zeros(p, dtype=bool)
        seen[order[:n]] = True
        lost = np.flatnonzero(~seen)
        raise ValueError(
            f"{name} contains a cycle: node {lost[0]} never reaches a root "
            f"({lost.size} node(s) affected)."
        )
    # subtree end positions: size of subtree accumulated leaves to root
    size = np.ones(p, dtype=np.int64)
    for node in order[::-1]:
        if parent[node] >= 0:
            size[parent[node]] += size[node]
    end = np.arange(p, dtype=np.int64) + size[order]
    return Tree(parent, order, end, depth)


def balanced_tree(branching):
    """Parent array of a balanced tree (the paper's trees).

    Parameters
    ----------
    branching : sequence of int
        ``branching[k]`` children for every node at depth ``k``; ``()`` gives a
        single root. ``(10, 2)`` is the paper's depth-3 tree with 31 nodes.

    Returns
    -------
    ndarray of int64
        Parent array in breadth-first order (node 0 is the root).
    """
    parent = [-1]
    level = [0]
    for i, b in enumerate(branching):
        b = check_int(b, f"branching[{i}]", minimum=1)
        nxt = []
        for node in level:
            for _ in range(int(b)):
                parent.append(node)
                nxt.append(len(parent) - 1)
        level = nxt
    return np.asarray(parent, dtype=np.int64)
