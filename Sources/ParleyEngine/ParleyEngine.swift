// ParleyEngine: see README.md
