{#- nbgrader 0.9's gradebook_notebooks.tpl without its inline script: its ids reach gradebook_notebooks.js as the JSON data of
    base.tpl (the course's copy). Everything else is nbgrader's own, printed with autoescaping. -#}
{%- extends 'nbgrader/gradebook_notebooks.tpl' -%}

{%- block head -%}
<script src="{{ base_url }}/formgrader/static/js/gradebook_notebooks.js"></script>
{%- endblock head -%}
