// formgrader's page scripts read their ids from globals (base_url, assignment_id, student_id, ...), which
// nbgrader 0.9 sets in inline <script> blocks with the values pasted in unescaped. The course's templates
// (lab/instructor/templates/) put the values in a JSON data block instead; this file, loaded before those
// scripts, makes them globals. No value is ever parsed as markup or code, and no inline script is needed.
(function () {
  var block = document.getElementById('course-page-data');
  var data = block ? JSON.parse(block.textContent) : {};
  Object.keys(data).forEach(function (name) {
    if (data[name] !== null) window[name] = data[name];
  });
  // nbgrader's onclick attributes, attached here instead (the policy runs no inline handler): the course's
  // templates name the action in data-course-click. Only these actions exist; a name is never evaluated.
  var actions = {
    createStudentModal: function () { createStudentModal(); },
    createAssignmentModal: function () { createAssignmentModal(); },
    // gradebook_notebook_submissions.js declares it with a top-level `let`: a global binding, not on window
    toggleAllNames: function () { toggleAllNames(); },
  };
  document.addEventListener('DOMContentLoaded', function () {
    document.querySelectorAll('[data-course-click]').forEach(function (element) {
      var action = actions[element.getAttribute('data-course-click')];
      if (action) element.addEventListener('click', action);
    });
  });
})();
