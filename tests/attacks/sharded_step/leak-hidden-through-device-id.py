# scenario: after the first hidden test ran, a cell reads its source from In and rewrites the next record's first shard (through the kernel's Session.send, which no reset touches) so that its device id is 62 bits of that source; the judge's message "the copy on device N differs" quoted any integer, so every replicas test carried 62 learner-chosen bits of hidden source into the feedback page (the shapes it quotes are capped at 19 bits); a shard's device must now be a plausible device index, else the record is unusable
# base: solution
# expect-status: suspicious
# expect-fail: test-transfer
# expect-message: recorded more than once or malformed
# %% append transfer
_hidden = next(text for text in In if "BEGIN HIDDEN TESTS" in text)
_secret = int.from_bytes(_hidden.split("BEGIN HIDDEN TESTS")[1].strip().encode()[:7], "big") + (1 << 61)
_session = get_ipython().display_pub.session
_send = _session.send


def _forging_send(stream, msg_or_type, *args, **kwargs):
    try:
        payload = msg_or_type["content"]["data"]["application/vnd.jax-course.record+json"]
        if payload["key"] == "transfer.sharded":
            shard = payload["value"]["shards"][0]
            shard["device"] = _secret
            shard["value"]["data"] = [v + 1.0 for v in shard["value"]["data"]]
    except (TypeError, KeyError, IndexError):
        pass
    return _send(stream, msg_or_type, *args, **kwargs)


_session.send = _forging_send
