print("bench: see the next issue")
