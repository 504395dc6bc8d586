"""Tool servers: turning ``tools=[...]`` into servers (`loader`), Python functions as a
server (`local`), the one session interface, the server descriptor and a server's offer
for a run (`base`), the sessions' lifetime (`connections`), and model-visible names, calls
and result text (`routing`).
"""
