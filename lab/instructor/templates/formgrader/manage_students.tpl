{#- nbgrader 0.9's manage_students.tpl without inline script or onclick attribute (page_data.js attaches the
    click handler; nothing else changes).
    Everything else is nbgrader's own, printed with autoescaping. -#}
{%- extends 'nbgrader/manage_students.tpl' -%}

{%- block table_footer -%}
<tr>
  <td colspan="5">
    <span class="glyphicon glyphicon-plus" aria-hidden="true"></span>
    <a href="#" data-course-click="createStudentModal">Add new student...</a>
  </td>
</tr>
{%- endblock -%}
