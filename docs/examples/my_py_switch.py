"""A Python-level switch for labkit.add_switch(python="my_py_switch:greenlet_switch"), with
this folder on sys.path: greenlet's, in the shape the lab asks of a Python switch.

    make(fn) -> ctx   a context that runs fn() when first resumed; when fn returns, control
                      goes back to the context that made ctx (greenlet's parent)
    swap(ctx)         resume ctx; returns when some context swaps back to this one
"""
import greenlet


def greenlet_switch():
    """The factory: no argument, returns (make, swap)."""
    def swap(g):
        g.switch()

    return greenlet.greenlet, swap
