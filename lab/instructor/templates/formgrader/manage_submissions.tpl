{#- nbgrader 0.9's manage_submissions.tpl without its inline script: its ids reach manage_submissions.js as the JSON data of
    base.tpl (the course's copy). Everything else is nbgrader's own, printed with autoescaping. -#}
{%- extends 'nbgrader/manage_submissions.tpl' -%}

{%- block head -%}
<script src="{{ base_url }}/formgrader/static/js/manage_submissions.js"></script>
{%- endblock head -%}
