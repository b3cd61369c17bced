{#- nbgrader 0.9's formgrade_404.tpl imports 'formgrade_macros.tpl', which nbgrader does not ship, so the page for a
    submission whose autograded notebook is missing failed with a server error. This copy imports the course's
    grading-page macros (lab/instructor/templates/formgrade/: escaped values, no inline script) and prints everything
    with autoescaping, the missing file's path (which holds the student id) included. -#}
{% from 'formgrade/formgrade_macros.html.j2' import nav, header %}

<!DOCTYPE html>
<html>
<head>
{{ header(resources) }}
<link rel="stylesheet" href="{{ resources.base_url }}/formgrader/static/css/formgrade.css" />
</head>

<body>
  {{ nav(resources) }}
  <div class="container">
    <div class="panel panel-default">
      <div class="panel-heading">
        <h4 class="panel-title">
          <span>{{ resources.notebook_id }}</span>
          <span class="pull-right">Submission {{ resources.index + 1 }} / {{ resources.total }}</span>
        </h4>
      </div>
      <div class="panel-body">
        <div id="notebook" class="border-box-sizing">
          <div class="container" id="notebook-container">
            Error: Submission notebook file not found: {{ resources.filename }}
          </div>
        </div>
      </div>
    </div>
  </div>
</body>

</html>
