{#- nbgrader 0.9's manage_students_notebook_submissions.tpl without its inline script: its ids reach manage_students_notebook_submissions.js as the JSON data of
    base.tpl (the course's copy). Everything else is nbgrader's own, printed with autoescaping. -#}
{%- extends 'nbgrader/manage_students_notebook_submissions.tpl' -%}

{%- block head -%}
<script src="{{ base_url }}/formgrader/static/js/manage_students_notebook_submissions.js"></script>
{%- endblock head -%}
