# scenario: the student notebook submitted as released, every TODO left unanswered
# base: student
# expect-fail: test-two-averages test-local-gradients test-equal-shards test-unequal-shards test-masked-mean test-shard-statistics test-combine test-device-partials test-shard-map test-microbatch-partials test-accumulation
# expect-message: raised NotImplementedError
