"""Tool servers: turning ``tools=[...]`` into servers (`loader`), Python functions as a
server (`local`), how each kind of server is reached and opened, with the configuration's
entries (`transports`), the one session interface, the server descriptor and a server's
offer for a run (`base`), the sessions' lifetime (`connections`), and model-visible names,
calls and result text (`routing`).
"""
