# scenario: script, event handlers, frames and javascript: links in the free-text answer; the code is correct
# base: solution
# expect-status: graded
# expect-fail:
# %% cell pause-and-reason
Give the shards *unequal* numbers of examples and compare with the global mean $\frac{1}{N}\sum_i g_i$.

<script>top.__pwned = 1; document.title = "pwned"; new Image().src = "http://127.0.0.1:9/pwned-script";</script>
<img src=x onerror="top.__pwned = 2; new Image().src = 'http://127.0.0.1:9/pwned-img'">
<svg><script>top.__pwned = 3</script></svg> <svg onload="top.__pwned = 4"></svg>
<a href="javascript:top.__pwned = 5">see the derivation</a> [or here](javascript:top.__pwned=6)
<iframe srcdoc="&lt;script&gt;top.__pwned = 7&lt;/script&gt;"></iframe> <object data="javascript:top.__pwned = 8"></object>
<style>@import url(http://127.0.0.1:9/pwned-style);</style>
<meta http-equiv="refresh" content="0;url=http://127.0.0.1:9/pwned-meta">
<details open ontoggle="top.__pwned = 9"><summary>more</summary></details>
<math><mtext><table><mglyph><style><img src=x onerror="top.__pwned = 10">
