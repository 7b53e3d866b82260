"""Settings shared by train.py and evaluate.py."""
EPOCHS = 2
BATCH_SIZE = 16
save_model_dir = "saved_model/model"
