// The inline scripts of nbgrader 0.9's grading page (formgrade_macros.html.j2), moved to a file: the course's
// Content-Security-Policy runs no inline script. Loaded after formgrader's own scripts (jQuery, utils.js).
function toggle_name(on) {
  $(".name-shown").tooltip('hide');
  $(".name-hidden").tooltip('hide');
  if (on) {
    $(".name-shown").show();
    $(".name-hidden").hide();
  } else {
    $(".name-hidden").show();
    $(".name-shown").hide();
  }
}

$(document).ready(function () {
  $("[data-link]").each(function () {
    $(this).map(linkTo("notebook", $(this).data("link"))).removeAttr("data-link");
  });
  $('span.glyphicon.name-hidden').tooltip({title: "Show student name", placement: "bottom", trigger: "hover"})
    .on('click', function () { toggle_name(true); });
  $('span.glyphicon.name-shown').tooltip({title: "Hide student name", placement: "bottom", trigger: "hover"})
    .on('click', function () { toggle_name(false); });
});
