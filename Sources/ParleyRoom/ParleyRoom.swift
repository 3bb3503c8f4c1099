// ParleyRoom: see README.md
