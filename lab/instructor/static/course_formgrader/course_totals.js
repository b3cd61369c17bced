// Manage Submissions with the course's totals (lab/instructor/templates/formgrader/manage_submissions.tpl): after
// nbgrader's Score, the late penalty and the total after it, as grades.csv and the export have them, from
// /formgrader/api/course/totals/<assignment> (grader/nbgrader_adapter/formgrader_totals.py). Where the grading service
// grades every submission (the hub), the Autograde cell says so instead of offering a button that would only refuse.
// Loaded after nbgrader's manage_submissions.js, before the window's load event that builds the table. Every value is
// set as text, never as markup.
(function () {
  var totals = { students: {}, service_grades: false, loaded: false };
  window.courseTotals = totals;

  function fill(view) {
    var penalty = view.$el.find('td.course-late-penalty');
    var total = view.$el.find('td.course-total');
    penalty.empty();
    total.empty();
    var mine = totals.students[view.model.get('student')];
    if (mine) {
      penalty.attr('data-order', mine.penalty).text(mine.penalty ? '- ' + roundToPrecision(mine.penalty, 2) : '0');
      if (mine.total === null) {
        total.attr('data-order', -1).text('after hand grading');
      } else {
        total.attr('data-order', mine.total)
          .text(roundToPrecision(mine.total, 2) + ' / ' + roundToPrecision(mine.max, 2));
      }
    }
    if (totals.service_grades) {
      view.$autograde.empty().append($('<span/>').addClass('text-muted')
        .attr('title', 'The grading service graded this at Submit and grades a new Submit again')
        .text('graded at Submit'));
    }
  }

  var stockInsertRow = insertRow;
  insertRow = function (table) {
    var row = stockInsertRow(table);
    var score = row.find('td.score');
    $('<td/>').addClass('text-center course-total').insertAfter(score);
    $('<td/>').addClass('text-center course-late-penalty').insertAfter(score);
    return row;
  };

  var stockRender = SubmissionUI.prototype.render;
  SubmissionUI.prototype.render = function () {
    stockRender.apply(this, arguments);
    fill(this);
  };

  // With the xsrf token, as formgrader's own requests (backbone_xsrf.js): JupyterHub takes a cookie-authenticated
  // request that is not a page navigation only with it.
  $.ajax({ url: base_url + '/formgrader/api/course/totals/' + encodeURIComponent(assignment_id), dataType: 'json',
           headers: { 'X-CSRFToken': getCookie('_xsrf') } })
    .done(function (answer) {
      totals.students = answer.students || {};
      totals.service_grades = !!answer.service_grades;
      if (totals.service_grades) $('#course-service-grades').prop('hidden', false);
      views.forEach(fill);
    })
    .always(function () { totals.loaded = true; });
})();
