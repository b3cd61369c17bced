{#- nbgrader 0.9's manage_submissions.tpl without its inline script: its ids reach manage_submissions.js as the JSON data of
    base.tpl (the course's copy). Two columns of the course's own, after Score: the late penalty and the total after
    it, as grades.csv and the export have them (course_totals.js fills them from /formgrader/api/course/totals/,
    grader/nbgrader_adapter/formgrader_totals.py). Everything else is nbgrader's own, printed with autoescaping. -#}
{%- extends 'nbgrader/manage_submissions.tpl' -%}

{%- block head -%}
<script src="{{ base_url }}/formgrader/static/js/manage_submissions.js"></script>
<script src="{{ base_url }}/static/course_formgrader/course_totals.js"></script>
{%- endblock head -%}

{%- block messages -%}
{{ super() }}
<div id="course-service-grades" class="alert alert-info" role="note" hidden>
  On this course the grading service grades every submission when the learner submits it, sealed in its sandbox, and
  grades a new Submit again the same way: formgrader's Autograde is off here (it would run the learner's code as you,
  unsealed). Grade the written answers in Manual Grading as usual.
</div>
<p class="text-muted">Score is nbgrader's sum of the cells' points. <b>Total</b> is what counts: autograded and
  hand-graded points less the <b>late penalty</b>, as in grades.csv, the class report and the Canvas or Moodle export.</p>
{%- endblock -%}

{%- block table_header -%}
<tr>
  <th>Student Name</th>
  <th class="text-center">Student ID</th>
  <th class="text-center">Timestamp</th>
  <th class="text-center">Status</th>
  <th class="text-center">Score</th>
  <th class="text-center">Late penalty</th>
  <th class="text-center">Total</th>
  <th class="text-center no-sort">Autograde</th>
  <th class="text-center no-sort">Generate Feedback</th>
  <th class="text-center no-sort">Release Feedback</th>
</tr>
{%- endblock -%}

{%- block table_body -%}
<tr>
  <td>Loading, please wait...</td>
  <td></td>
  <td></td>
  <td></td>
  <td></td>
  <td></td>
  <td></td>
  <td></td>
  <td></td>
  <td></td>
</tr>
{%- endblock -%}
