# Two commands set up everything on a fresh machine (Python 3.11 + pip):
#   make demo   build student notebooks, execute the instructor notebooks, grade the samples
#   make test   run the test suite (make test-fast: a quick subset while editing)
#   make docs   build the documentation and the lessons as a web site into site/ (no network needed)
# Both create .venv/ first if it is missing or out of date.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
GRADING := .

.PHONY: demo test test-fast docs lab instructor serve hub workspace generate figures samples grade clean-grading

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

# A term's records are never the demo's to touch: each target that would replace or delete grading records asks
# grader.term.guard first (a folder marked TERM.json, or holding records of learners who are not the samples').
demo: $(STAMP)
	$(PY) -m grader term guard --for demo --out $(GRADING)
	$(PY) -m grader generate
	$(PY) -m grader figures
	$(PY) -m grader samples
	$(PY) -m grader grade --submissions samples/submitted --out $(GRADING) --force --gradebook sqlite:///$(abspath $(GRADING))/gradebook.db
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VENV)/bin/nbgrader db student import samples/roster.csv --log-level=WARN \
		--CourseDirectory.db_url=sqlite:///$(abspath $(GRADING))/gradebook.db
	@$(PY) -m grader report --out $(GRADING) --html > /dev/null && echo "class report: $(abspath $(GRADING))/class-report/index.html"

# The suite on three workers (tests/conftest.py hands each test file to one of them; docs/how-to/test-and-ci.md).
test: $(STAMP)
	$(PY) -m pytest -q -n auto tests

# A quick loop while editing (about 3 minutes, a convenience: make test stays the gate): the unit, property and
# program tests, and the scenario tests on the samples plus the scenarios those tests name.
FAST_TESTS := $(addprefix tests/test_,$(addsuffix .py,architecture lint units hooks late late_export_report_attacks \
	evidence validate_service instructor_inputs diagnosis properties program_structure lessons identical_notebooks \
	compile_cache runtime artifacts programs xss feedback_page sandbox scenarios timing))
FAST_SCENARIOS := sample/*,corpus/sharded_step/wrong-numpy-outputs,attack/sharded_step/net-host-listener
test-fast: $(STAMP)
	GRADER_SCENARIOS='$(FAST_SCENARIOS)' $(PY) -m pytest -q -n auto -m "not slow" $(FAST_TESTS)

# The site: docs/ and the three lessons rendered from notebooks/ with their figures (mkdocs.yml), into site/.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

# The learner's JupyterLab: rooted at workspace/ (git-ignored, copied once from notebooks/,
# never regenerated), no formgrader, source/ and grading output out of reach.
# ARGS go to JupyterLab as they are: make lab ARGS="--port=8899 --no-browser"
ARGS ?=
lab: $(STAMP)
	$(PY) -m grader lab $(ARGS)

# The instructor's JupyterLab: the course root, opened on formgrader (ARGS as for lab).
instructor: $(STAMP)
	$(PY) -m grader instructor $(ARGS)

# The grading service: each submission in the exchange graded as it arrives, its feedback released for
# Fetch Feedback, Validate's diagnoses on a loopback port (docs/how-to/feedback-at-submit.md; ARGS as for lab).
serve: $(STAMP)
	$(PY) -m grader serve $(ARGS)

# A JupyterHub for the class on this machine, as root: Unix accounts from samples/roster.csv, each learner's server
# as that learner, the grading service managed by the hub (docs/how-to/run-a-class-on-jupyterhub.md).
# make hub ARGS="--port 8001"   (or HUB_PORT=8001 make hub)
hub: $(STAMP)
	@test "$$(id -u)" = 0 || { echo "make hub must run as root (sudo make hub): it creates Unix accounts and starts each learner's server as that learner" >&2; exit 2; }
	$(PY) -m grader hub $(ARGS)

workspace: $(STAMP)
	$(PY) -m grader workspace

generate: $(STAMP)
	$(PY) -m grader generate

figures: $(STAMP)
	$(PY) -m grader figures

samples: $(STAMP)
	$(PY) -m grader term guard --for samples --out samples/submitted
	$(PY) -m grader samples

# Only what grading makes again (grader/term/records.py, DEMO_OUTPUT); never the history, hand grades, appeals, the
# service's attempts or gradebook.db, and nothing at all in a term's folder.
clean-grading: $(STAMP)
	$(PY) -m grader term clean --out $(GRADING)
