"""The studies' tables in docs/*.md: written between two marker lines, the text around them kept."""
import os


def write_block(path, begin, end, text, title):
    """Puts `text` between the lines `begin` and `end` of the Markdown file `path`, replacing what was
    there; a new file (or one without the markers) gets `# title`, then the block."""
    block = f"{begin}\n{text}\n{end}"
    if os.path.exists(path):
        old = open(path).read()
        if begin in old and end in old:
            block = old[: old.index(begin)] + block + old[old.index(end) + len(end):]
            open(path, "w").write(block)
            return
    open(path, "w").write(f"# {title}\n\n{block}\n")
