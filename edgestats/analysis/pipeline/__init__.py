"""The pipeline analysis: data-loading stalls against workers and resource use against batch size (the
Jetson study).
"""
