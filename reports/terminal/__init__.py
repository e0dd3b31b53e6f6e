"""What the commands print on a terminal, one module per command's output.

Each is a function of the result the library returned: the CLI parses, calls the library, and
hands the result here.
"""
