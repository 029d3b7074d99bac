"""Scripted experts whose demonstrations the benchmarks feed to the buffer: FetchPush and PointMaze.

One module per expert; both need gymnasium-robotics, imported when an env is made, so importing them is free.
"""
