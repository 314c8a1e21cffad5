"""The node agent: supervises the game servers and bots of one machine for the control plane.

It imports nothing from the Django project: it runs on other machines. ``agent.launch`` is
imported by every process the agent starts, so this module stays empty of imports.
"""

__version__ = "0.1.0"
