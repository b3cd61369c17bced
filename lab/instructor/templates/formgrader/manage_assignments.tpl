{#- nbgrader 0.9's manage_assignments.tpl without inline script or onclick attribute (page_data.js attaches the
    click handler; the ids its script reads are the JSON data of base.tpl).
    Everything else is nbgrader's own, printed with autoescaping. -#}
{%- extends 'nbgrader/manage_assignments.tpl' -%}

{%- block head -%}
<script src="{{ base_url }}/formgrader/static/js/manage_assignments.js"></script>
{%- endblock head -%}

{%- block table_footer -%}
<tr>
  <td colspan="11">
    <span class="glyphicon glyphicon-plus" aria-hidden="true"></span>
    <a href="#" data-course-click="createAssignmentModal">Add new assignment...</a>
  </td>
</tr>
{%- endblock -%}
