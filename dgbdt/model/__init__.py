"""The trained model: Booster, XGBoost's JSON format both ways, SHAP values, importance."""
