{#- nbgrader 0.9's gradebook_notebook_submissions.tpl without its inline script: its ids reach gradebook_notebook_submissions.js as the JSON data of
    base.tpl (the course's copy). Everything else is nbgrader's own, printed with autoescaping. -#}
{%- extends 'nbgrader/gradebook_notebook_submissions.tpl' -%}

{%- block head -%}
<script src="{{ base_url }}/formgrader/static/js/gradebook_notebook_submissions.js"></script>
{%- endblock head -%}

{#- nbgrader's button has onclick="toggleAllNames()": page_data.js attaches the handler -#}
{%- block messages -%}
<button id="toggle_names" data-course-click="toggleAllNames">Show All Names</button>
{%- endblock -%}
