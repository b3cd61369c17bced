# scenario: rounds the ring payloads to whole bytes: right whenever p divides G, off by a fraction of a byte otherwise
# base: solution
# expect-fail: test-payload
# expect-message: rounded to whole bytes
# %% cell payload
def ring_payload(gradient_bytes, ranks):
    scatter_bytes = round((ranks - 1) / ranks * gradient_bytes)
    return scatter_bytes, round(2 * (ranks - 1) / ranks * gradient_bytes)
