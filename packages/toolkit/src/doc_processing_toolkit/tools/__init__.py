"""Tool servers: turning ``tools=[...]`` into servers (`loader`), Python functions as a
server (`local`), the one session interface and server descriptor (`base`), tool name
prefixes (`prefixed`) and the sessions' lifetime (`connections`).
"""
