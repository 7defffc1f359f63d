"""A room's run as a notebook shows it (compare_machines.py): the live table of every
machine's state, then the verdicts by machine and the ladder figure as bundles arrive."""
from __future__ import annotations

from IPython.display import display

from labkit.lab.analysis.compare_machines import ladder_figure
from labkit.lab.room import room
# ipywidgets (the lab extra) is imported where used: it may be absent.


def _views(r: room.RoomRun) -> list:
    out = [r.table]
    if r.merge_error:
        out.append(f"not merged: {r.merge_error}")
    if r.comparison is not None:
        out.append(r.comparison["verdicts"])
        fig = ladder_figure(r.comparison)
        if fig is not None:
            out.append(fig)
    return out


def watch(room_path, **kwargs) -> room.RoomRun:
    """room.run() for a notebook: a live table (ipywidgets when available, else an updated
    display) of each machine's state; the verdicts by machine and the ladder figure
    appear and update as bundles arrive. kwargs go to room.run()."""
    try:
        import ipywidgets as widgets

        box = widgets.Output()
        display(box)

        def show(r):
            with box:
                box.clear_output(wait=True)
                for v in _views(r):
                    display(v)
    except ImportError:
        handles = [display(None, display_id=True) for _ in range(4)]

        def show(r):
            for h, v in zip(handles, _views(r)):
                h.update(v)
    return room.run(room_path, on_update=show, **kwargs)
