"""Pure parsers of what GPU tools print: text in (live output or a paste with prompts, quote
marks and cut tables), typed values out. They never raise and never touch the machine, so the
probes (live output) and `explain` (a pasted report) read the same text the same way."""
