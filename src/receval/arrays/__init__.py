"""The scikit-learn-style array functions: classification and rating metrics."""
