# Run by dist/deb.sh on the packaged README.md: its links to files that
# the Debian package holds under other names, in /usr/share/doc/backoff.
s/](CHANGELOG\.md)/](changelog.gz)/g
s/](LICENSE-MIT)/](copyright)/g
s/](LICENSE-APACHE)/](copyright)/g
