"""The defaults of a download (corpus/download.py), which `corpus download` shows and `import` uses: apart
from the download itself, whose HTTP, TLS and mail-header modules every command's parser loaded only to
read them (23 ms of each command's start, before an import's head start could begin)."""

PARALLEL = 4
RETRIES = 8
RETRY_TIME = 3600.0  # an hour of failures on one file; its .part stays for the next run
TIMEOUT = 60.0
