"""The edges: the only doors between gpuenv and the world outside its own memory.

- `files`: reading a file (regular files only, opened without blocking, a byte cap per kind);
- `process`: running a child (argv, own process group, a deadline on reading, the whole group
  killed at the deadline or on Ctrl-C, head and tail of the output kept);
- `output`: writing (text and JSON to the standard streams, files atomically beside their target,
  never through a link).

Everything else goes through these modules, so that tests attack each gateway once instead of
every caller. They import nothing from the rest of gpuenv but `errors` and two pure text
helpers of `render` (JSON text, printable text).
"""
