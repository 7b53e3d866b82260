"""Evaluates what train.py saved, with train.py's model builder."""
import tensorflow as tf

import config
from prepare_data import generate_datasets
from train import get_model

if __name__ == "__main__":
    train_dataset, test_dataset = generate_datasets()
    model = get_model()
    model.load_weights(filepath=config.save_model_dir)
    accuracy = tf.keras.metrics.SparseCategoricalAccuracy()
    for images, labels in test_dataset:
        accuracy(labels, model(images, training=False))
    print("The accuracy on test set is: {:.3f}%".format(accuracy.result() * 100))
