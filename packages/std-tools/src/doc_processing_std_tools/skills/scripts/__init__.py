"""Running a skill's script: the policy of a call, bubblewrap and the supervisor that builds
the script's view of the workspace, the control group, the system-call filter, the staging
of the script's changes and their application through the server's change policy.

May import: the package's shared helpers, settings, ``access`` and ``change_policy``. Never
another wing of ``skills``: a script run knows the skill only as an open folder.
``_supervisor`` and ``_view`` are run by path inside the sandbox and import nothing of the
package.
"""
