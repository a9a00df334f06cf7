print("signtool")
