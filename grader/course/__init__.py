"""Building the course from source/: student notebooks, figures, sample class, scenario submissions."""
