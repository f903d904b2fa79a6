"""How messages name components: numbered from 1, as the report, the methods
paragraph and the command line's progress lines do, with the row of
``components_`` that holds each one (Python counts from 0)."""


def component_names(ks, n_components=None, rows=True):
    """Name components ``ks`` (rows of ``components_``) for a message.

    Parameters
    ----------
    ks : int or sequence of int
        Rows of ``components_`` (counted from 0).
    n_components : int, optional
        The number of components, appended as "of n".
    rows : bool, default=True
        Name the rows of ``components_`` too; False for a component named while
        a fit runs (the joint fit orders its components by variance at the end).

    Returns
    -------
    str
        E.g. ``"component 2 (components_[1])"`` or
        ``"components 1 and 3 of 4 (components_ rows [0, 2])"``.

    Examples
    --------
    >>> component_names(0)
    'component 1 (components_[0])'
    >>> component_names([0, 2], 4)
    'components 1 and 3 of 4 (components_ rows [0, 2])'
    >>> component_names(2, rows=False)
    'component 3'
    """
    ks = [int(ks)] if not hasattr(ks, "__len__") else [int(k) for k in ks]
    of = "" if n_components is None else f" of {int(n_components)}"
    ones = [str(k + 1) for k in ks]
    if len(ks) == 1:
        where = f" (components_[{ks[0]}])" if rows else ""
        return f"component {ones[0]}{of}{where}"
    where = f" (components_ rows {ks})" if rows else ""
    return f"components {', '.join(ones[:-1])} and {ones[-1]}{of}{where}"
