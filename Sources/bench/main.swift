// The benchmark lands with the next issue (bench: every operation beside its crypto floor).
print("bench: not implemented yet; see the README, section Performance")
