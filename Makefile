# Two commands set up everything on a fresh machine (Python 3.11 + pip):
#   make demo   build student notebooks, execute the instructor notebooks, grade the samples
#   make test   run the test suite
#   make docs   build the documentation and the lessons as a web site into site/ (no network needed)
# Both create .venv/ first if it is missing or out of date.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
GRADING := .

.PHONY: demo test docs lab instructor serve hub workspace generate figures samples grade clean-grading

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m grader generate
	$(PY) -m grader figures
	$(PY) -m grader samples
	$(PY) -m grader grade --submissions samples/submitted --out $(GRADING) --force --gradebook sqlite:///$(CURDIR)/gradebook.db
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VENV)/bin/nbgrader db student import samples/roster.csv --log-level=WARN
	@$(PY) -m grader report --out $(GRADING) --html > /dev/null && echo "class report: $(abspath $(GRADING))/class-report/index.html"

test: $(STAMP)
	$(PY) -m pytest -q -n auto tests

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
	$(PY) -m grader samples

clean-grading:
	rm -rf autograded feedback results grades.csv results.json gradebook.db .compile-cache class-report
