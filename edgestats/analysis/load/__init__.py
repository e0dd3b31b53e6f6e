"""Reading what the analyses need from a results DB, a glob of DBs or a lake, as polars frames. They
need runs and their frames, the report's overview, power trace and environment.
"""
