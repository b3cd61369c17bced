# scenario: a learner cell displays HTML, SVG, JavaScript, markdown and a widget view that run script; the rest is correct
# base: solution
# expect-status: graded
# expect-fail:
# %% append placements
from IPython.display import HTML, SVG, Javascript, Markdown, display

display(HTML("<b>done</b><script>top.__pwned = 'html'</script><img src=x onerror=\"top.__pwned = 'img'\">"))
display(SVG('<svg xmlns="http://www.w3.org/2000/svg" onload="top.__pwned = 1"><script>top.__pwned = 2</script></svg>'))
display(Javascript("top.__pwned = 'js'; new Image().src = 'http://127.0.0.1:9/pwned-js'"))
display(Markdown("*fine* <img src=x onerror=\"top.__pwned = 'md'\">"))
display({"application/vnd.jupyter.widget-view+json": {"model_id": "x", "version_major": 2, "version_minor": 0},
         "text/html": "<iframe src=\"javascript:top.__pwned = 'frame'\"></iframe>"}, raw=True)
display({"image/png": "iVBORw0KGgo=", "text/plain": "png"},
        metadata={"image/png": {"width": "1 onload=top.__pwned=5"}}, raw=True)
