# JupyterLab for labkit, loaded by `make lab` (and the browser test) through
# JUPYTER_CONFIG_PATH=jupyter/, on top of the user's own configuration: anything set
# here can still be changed on the command line.
from pathlib import Path

HERE = Path(__file__).resolve().parent

# New notebooks and consoles start on the lab's kernel, the one `make setup` registers in
# .venv (it imports labkit and its compiled extension), not on a bare python3.
c.MappingKernelManager.default_kernel_name = "labkit"

# Open on the start page, which explains the lab and links every experiment.
c.LabApp.default_url = "/lab/tree/start_here.ipynb"

# Default settings for the lab (lab-settings/overrides.json): .py notebooks open as
# notebooks through jupytext, and JupyterLab asks no server on the internet for news or
# updates (a workshop room's network is often slow, CI has none). A user's own settings
# still win over these defaults.
c.LabApp.app_settings_dir = str(HERE / "lab-settings")
c.LabApp.news_url = None
c.LabApp.check_for_updates_class = "jupyterlab.NeverCheckForUpdate"
